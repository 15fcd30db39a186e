"""Naming the kind of a disease the findings point to (HKI's last ordering step).

The KG ranker lets a parent disease take over the findings of its best-supported subtype, so that "pneumonia" can
stand for its kinds when the findings do not tell them apart. When they do — the parent ranks high only by speaking
for one subtype, and no other subtype fits nearly as well — a clinician names the subtype: panic disorder, not
"anxiety disorder". :func:`name_subtypes_first` makes that move on the fused differential, given every disease's own
KG score (``KGRanker.scores`` with no parent taking over a subtype's findings).
"""
from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from .types import Candidate


def has_subtype_pair(candidates: list[Candidate], kg: Any, depth: int = 2, either_way: bool = False) -> bool:
    """Whether a candidate has an ``is_a`` ancestor (up to ``depth`` steps) earlier in the list (``either_way``:
    anywhere in it): the only case :func:`name_subtypes_first` (:func:`fold_empty_broader`) can change (checked
    first, so the ranking's own scores are computed only then)."""
    if either_way:
        ids = {c.concept_id for c in candidates}
        return any(ids.intersection(kg.ancestors(c.concept_id, depth)) for c in candidates)
    seen: set[str] = set()
    for c in candidates:
        if seen and seen.intersection(kg.ancestors(c.concept_id, depth)):
            return True
        seen.add(c.concept_id)
    return False


def name_subtypes_first(candidates: list[Candidate], kg: Any, own: dict[str, float], ratio: float = 0.5,
                        standout: float = 2.0, depth: int = 2) -> list[Candidate]:
    """The candidates with a subtype moved just before its parent disease (an ``is_a`` ancestor up to ``depth`` steps
    above it, earlier in the list) when the evidence singles the subtype out: the parent's own score in ``own`` (the
    KG ranking's scores when no parent takes over a subtype's findings) is under ``ratio`` times the subtype's, so
    the parent ranked high only by speaking for it, and the subtype's own score is at least ``standout`` times that
    of every other subtype of the parent, so the findings point to this one rather than to several. "Anxiety disorder"
    leads a presentation of flashbacks and nightmares through its subtype: post-traumatic stress disorder is named
    first. A parent whose subtypes fit about equally ("arthritis" over gout and osteoarthritis) stays where it is.
    The moved subtype takes its parent's score (the order stays sorted), says why it moved and names the parent in
    ``subtype_of`` (the diagnostic confidence does not count the parent as its rival)."""
    if ratio <= 0 or len(candidates) < 2:
        return candidates
    out = list(candidates)
    above = {c.concept_id: set(kg.ancestors(c.concept_id, depth)) for c in out}

    def below(p: str) -> set[str]:
        seen: set[str] = set()
        frontier = [p]
        for _ in range(depth):
            frontier = [c for x in frontier for c in kg.children(x) if c not in seen and not seen.add(c)]
        return seen

    i = 0
    while i < len(out) - 1:
        parent = out[i]
        p_own = own.get(parent.concept_id, 0.0)
        for j in range(i + 1, len(out)):
            child = out[j]
            c_own = own.get(child.concept_id, 0.0)
            if c_own <= 0 or p_own >= ratio * c_own or parent.concept_id not in above[child.concept_id]:
                continue
            rivals = [own.get(x, 0.0) for x in below(parent.concept_id) if x != child.concept_id]
            if c_own < standout * max(rivals, default=0.0):
                continue
            why = (f"named before {parent.name}: of its subtypes the findings single this one out (its own "
                   f"knowledge-graph score {c_own:.3g}, {parent.name}'s own {p_own:.3g})")
            moved = child.model_copy(update={"score": max(child.score, parent.score), "subtype_of": parent.concept_id,
                                             "explanation": f"{child.explanation}; {why}" if child.explanation
                                             else why})
            out = [*out[:i], moved, *out[i:j], *out[j + 1:]]
            i += 1      # the parent, now after its subtype
            break
        i += 1
    return out


def mark_relatives(candidates: list[Candidate], kg: Any, depth: int = 2, fold: bool = False) -> list[Candidate]:
    """Says which candidates name a disease ranked earlier again: another id of it, a broader term or a kind of it
    (``is_a`` up to ``depth`` steps either way). "Stroke" after "hemorrhagic stroke" reads as one diagnosis twice
    unless the differential says how the two relate: the later one's ``relative_of`` says so ("a broader term for
    hemorrhagic stroke"). With ``fold`` it is folded into the earlier one instead and gives its place to the next
    disease (the earlier one lists it in ``also``, id -> words, and names it in its explanation; a candidate the
    language model proposed is never folded) — measured on the dev halves, folding loses more than it gains on strict
    matching ("coronary artery disease" after "myocardial infarction" is the gold of stable angina), so it is off by
    default (``docs/results.md``)."""
    if len(candidates) < 2 or depth <= 0:
        return candidates
    kept: list[Candidate] = []
    same: list[set[str]] = []          # per kept candidate: its id and its equivalents
    above: list[set[str]] = []         # ... its ancestors
    folded: dict[int, list[tuple[str, str]]] = {}
    for c in candidates:
        mine = {c.concept_id, *kg.equivalents(c.concept_id)}
        mine_above = set(kg.ancestors(c.concept_id, depth))
        home, how = None, ""
        for i in range(len(kept)):
            if mine & same[i]:
                home, how = i, "another name"
            elif mine & above[i]:
                home, how = i, "a broader term"
            elif same[i] & mine_above:
                home, how = i, "a kind"
            if home is not None:
                break
        if home is None or not fold or "model" in c.origins:
            if home is not None:
                c = c.model_copy(update={"relative_of": f"{how} {'of' if how == 'a kind' else 'for'} "
                                                        f"{kept[home].name}"})
            kept.append(c)
            same.append(mine)
            above.append(set().union(*(kg.ancestors(x, depth) for x in mine)))
            continue
        folded.setdefault(home, []).append((c.concept_id, f"{c.name} ({how})"))
    out = []
    for i, k in enumerate(kept):
        extra = folded.get(i)
        if extra:
            note = "also covers " + ", ".join(n for _, n in extra)
            k = k.model_copy(update={"also": {**k.also, **dict(extra)},
                                     "explanation": f"{k.explanation}; {note}" if k.explanation else note})
        out.append(k)
    return out


def fold_empty_broader(candidates: list[Candidate], kg: Any, own: dict[str, float], depth: int = 2,
                       borrowed: Collection[str] = ("kg", "site")) -> list[Candidate]:
    """The candidates without each broader term that holds nothing of its own and has a kind of it in the list: a
    disease put forward only by the graph's ranking (or the organ under a pain, ``borrowed`` origins), whose own
    knowledge-graph score in ``own`` (no parent taking over a subtype's findings) is zero, ranked only by speaking for
    a subtype ("paranasal sinus disease" for sinusitis, "pancreas disease" for pancreatitis). Listed beside that kind
    it names the same diagnosis again, vaguer; it is folded into the best-placed kind of it (``is_a`` up to ``depth``
    steps below it, itself not such a term), which takes the better of the two places and lists it in ``also``. A
    candidate the language model proposed is never folded."""
    if len(candidates) < 2 or depth <= 0:
        return candidates
    empty = {i for i, c in enumerate(candidates)
             if c.origins and not set(c.origins) - set(borrowed) and own.get(c.concept_id, 0.0) <= 0.0}
    into: dict[int, int] = {}           # an empty broader term -> its best-placed kind that holds evidence
    for i in empty:
        j = next((j for j, d in enumerate(candidates)
                  if j not in empty and candidates[i].concept_id in kg.ancestors(d.concept_id, depth)), None)
        if j is not None:
            into[i] = j
    if not into:
        return candidates
    out: list[Candidate] = []
    placed: set[int] = set()
    for i in range(len(candidates)):
        j = into.get(i, i)              # a folded term's place goes to its kind, if that is not yet listed
        if j in placed:
            continue
        k = candidates[j]
        parts = [candidates[x] for x in sorted(into) if into[x] == j]
        if parts:
            note = "also covers " + ", ".join(f"{x.name} (a broader term)" for x in parts)
            k = k.model_copy(update={"score": max([k.score, *(x.score for x in parts)]),
                                     "also": {**k.also, **{x.concept_id: f"{x.name} (a broader term)" for x in parts}},
                                     "explanation": f"{k.explanation}; {note}" if k.explanation else note})
        out.append(k)
        placed.add(j)
    return out


def disease_ids(cid: str, kg: Any) -> list[str]:
    """The disease ids a concept is: itself and its equivalent ids that are diseases (HPO "Thrombocytopenia" is the
    disease thrombocytopenia)."""
    out = []
    for i in (cid, *sorted(kg.equivalents(cid))):
        c = kg.concept(i)
        if c is not None and c.category == "disease":
            out.append(i)
    return out


def _mark(candidates: list[Candidate], why: dict[str, str],
          factors: float | dict[str, float]) -> tuple[list[Candidate], bool]:
    """The candidates with each one in ``why`` (candidate id -> the reason against it) marked so (``demoted``) and its
    score multiplied by its factor (``factors``: one for all, or candidate id -> factor; 1 leaves the score), in the
    same order; and whether any score changed."""
    out, moved = [], False
    for c in candidates:
        reason = why.get(c.concept_id)
        if reason is None:
            out.append(c)
            continue
        factor = factors if isinstance(factors, (int, float)) else factors.get(c.concept_id, 1.0)
        update: dict[str, Any] = {"demoted": "; ".join(x for x in (c.demoted, reason) if x)}
        if factor != 1.0:
            update["score"] = round(c.score * factor, 4)
            moved = True
        out.append(c.model_copy(update=update))
    return out, moved


def rule_out(candidates: list[Candidate], why: dict[str, str], factor: float) -> list[Candidate]:
    """The candidates with each one in ``why`` (candidate id -> "ruled out by ...") marked so (``demoted``), its
    score multiplied by ``factor`` and, when ``factor`` < 1, placed after every open candidate (stable; 1: marked
    only, order kept). Never dropped: the clinician sees what was considered and why it fell."""
    out, _ = _mark(candidates, why, factor)
    if factor < 1.0:
        out.sort(key=lambda c: (c.concept_id in why, -c.score))
    return out


def move_down(candidates: list[Candidate], why: dict[str, str], factors: float | dict[str, float]) -> list[Candidate]:
    """The candidates with each one in ``why`` (candidate id -> the reason against it) marked so (``demoted``) and its
    score multiplied by its factor (``factors``: one for all, or candidate id -> factor), then back in score order
    (stable; all factors 1: marked only, order kept). Never dropped: the clinician sees what was considered and why
    it fell. Unlike :func:`rule_out`, a moved candidate may stay above others (a reason against, not a settled
    exclusion)."""
    if not why or not candidates:
        return candidates
    out, moved = _mark(candidates, why, factors)
    if moved:
        out.sort(key=lambda c: -c.score)
    return out


# the words right after a condition make it another person's: "an HIV-positive partner", "a diabetic mother"
_ANOTHER_PERSONS = re.compile(
    r"^[\s-]*(?:sexual\s+)?(?:partners?|spouse|husband|wife|boyfriend|girlfriend|contacts?|roommates?|mother|father|"
    r"parents?|brother|sister|siblings?|sons?|daughters?|child(?:ren)?|friends?|co-?workers?|colleagues?)\b", re.I)


def another_persons(entity: Any, text: str) -> bool:
    """The words right after ``entity`` in ``text`` give it to another person ("an HIV-positive partner")."""
    return bool(text) and entity.end >= 0 and _ANOTHER_PERSONS.match(text[entity.end:entity.end + 40]) is not None


def patients_history(entity: Any, text: str = "") -> bool:
    """``entity`` is a condition of the patient's own past history or known conditions: historical, with a concept,
    not denied, not a relative's, not hypothetical and (with the presentation's ``text``) not given to another person
    by the words after it."""
    if not (entity.historical and entity.concept_id) or entity.negated or entity.family or entity.hypothetical:
        return False
    return not another_persons(entity, text)


def known_conditions(entities: list[Any], kg: Any, text: str = "") -> dict[str, str]:
    """The diseases the patient is said to have already, as KG disease id -> the words that say so: entities of the
    patient's own past history or known conditions ("a woman with type 1 diabetes has ...", "history of COPD"), not
    denied, not a relative's, not hypothetical, whose concept is a disease or the phenotype of one (its equivalent
    ids: HPO "Type I diabetes mellitus" is DO type 1 diabetes mellitus). With the presentation's ``text``, a condition
    the next words give to another person ("intercourse with an HIV-positive partner") is not the patient's."""
    out: dict[str, str] = {}
    for e in entities:
        if not patients_history(e, text):
            continue
        for cid in disease_ids(e.concept_id, kg):
            out.setdefault(cid, e.text)
    return out


def known_or_broader(known: dict[str, str], kg: Any, depth: int = 1) -> dict[str, str]:
    """The known conditions (id -> words) and their broader terms (``is_a`` up to ``depth`` steps), each with the
    words of the condition it comes from."""
    above: dict[str, str] = {}
    for kid, words in known.items():
        for a in (kid, *kg.ancestors(kid, depth)):
            above.setdefault(a, words)
    return above


def is_known(cid: str, above: dict[str, str], kg: Any) -> str | None:
    """The words of the known condition ``cid`` is (or another id of it is) in ``above``
    (:func:`known_or_broader`), else None."""
    return next((above[i] for i in (cid, *sorted(kg.equivalents(cid))) if i in above), None)


def demote_known(candidates: list[Candidate], known: dict[str, str], kg: Any, factor: float = 1.0,
                 depth: int = 1, fit: dict[str, float] | None = None,
                 complications: Collection[str] = (), yield_ratio: float = 0.5) -> list[Candidate]:
    """Marks the candidates that are a condition the patient is known to have (``known``: id -> words, from
    :func:`known_conditions`), another id of one or a broader term for one (``is_a`` up to ``depth`` steps): the
    differential is about the present illness, and "type 1 diabetes mellitus" first for a known diabetic with
    vomiting and Kussmaul breathing names the context, not the diagnosis (diabetic ketoacidosis). Each such candidate
    says so (``known_condition``) and its score is multiplied by ``factor`` (1: marked only), then the list is put
    back in score order (stable). A known condition may still be the answer (an exacerbation of known COPD), so it is
    never dropped.

    ``fit`` (the knowledge-graph ranking's scores, id -> score; None: not used) and ``complications`` (the candidates
    the patient's history makes likelier: the risk-factor table's diseases of the known condition): a known condition
    yields its place to the complication below it that the findings fit best when the findings fit that one at least
    ``yield_ratio`` times as well as the known condition itself — the known diabetic's name for his diabetes finds its
    pages and his diabetes explains hyperglycaemia whatever is happening, the ketoacidosis his vomiting, deep breathing
    and acidosis describe is the present illness and is named first. Any other disease stays behind it (a known
    pericarditis or asthma is often the present illness again). The moved candidate takes the known condition's score
    (the order stays sorted) and says why it moved; nothing else moves."""
    if not known or not candidates:
        return candidates
    above = known_or_broader(known, kg, depth)
    out = []
    for c in candidates:
        words = is_known(c.concept_id, above, kg)
        if words is None:
            out.append(c)
            continue
        update: dict[str, Any] = {"known_condition": f"a known condition of the patient ({words})"}
        if factor != 1.0:
            update["score"] = round(c.score * factor, 4)
        out.append(c.model_copy(update=update))
    if factor != 1.0:
        out.sort(key=lambda c: -c.score)   # stable: equal scores keep their order
    return yield_to_fit(out, fit, complications, yield_ratio) if fit and complications and yield_ratio > 0 else out


def yield_to_fit(candidates: list[Candidate], fit: dict[str, float], complications: Collection[str],
                 ratio: float = 0.5) -> list[Candidate]:
    """The candidates with, for the first known condition (``known_condition`` set) after which an open candidate of
    ``complications`` fits at least ``ratio`` times as well (``fit``), the best-fitting of those moved just before it,
    taking its score (see :func:`demote_known`)."""
    out = list(candidates)
    for i, k in enumerate(out):
        if not k.known_condition:
            continue
        own = fit.get(k.concept_id, 0.0)
        later = [j for j in range(i + 1, len(out)) if out[j].concept_id in complications
                 and not out[j].known_condition and not out[j].demoted and fit.get(out[j].concept_id, 0.0) > 0
                 and fit[out[j].concept_id] >= ratio * own]
        if not later:
            continue
        j = max(later, key=lambda j: (fit[out[j].concept_id], -j))
        why = f"named before the known condition {k.name}: a complication of it that the findings describe"
        moved = out[j].model_copy(update={"score": k.score, "explanation": "; ".join(
            x for x in (out[j].explanation, why) if x)})
        return out[:i] + [moved] + out[i:j] + out[j + 1:]
    return out


def demote_denied(candidates: list[Candidate], entities: list[Any], kg: Any, factor: float = 0.1) -> list[Candidate]:
    """The candidates with each one that a denied finding names (the finding is, or is another id of, the disease:
    "platelet count 250,000/mm3" denies the finding thrombocytopenia, which HPO equates with the disease) marked
    "ruled out by ..." (``demoted``), its score multiplied by ``factor`` and, below 1, placed after every open one. A
    word search that read the analyte's name ("platelet count") must not put the excluded disease back; never
    dropped."""
    gone: dict[str, str] = {}
    for e in entities:
        if e.negated and e.concept_id and not (e.family or e.hypothetical):
            for cid in disease_ids(e.concept_id, kg):
                gone.setdefault(cid, e.text)
    if not gone or not candidates:
        return candidates
    why = {c.concept_id: f"ruled out by {w}" for c in candidates if (w := is_known(c.concept_id, gone, kg))}
    return rule_out(candidates, why, factor)


__all__ = ["mark_relatives", "has_subtype_pair", "name_subtypes_first", "known_conditions", "known_or_broader",
           "is_known", "demote_known", "demote_denied", "disease_ids", "rule_out", "move_down"]
