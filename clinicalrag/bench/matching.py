"""Ontology-aware matching of predicted diagnoses against a gold label.

Both sides are linked to knowledge-graph disease concepts: the gold label through the dataset's alias table, the
case's own gold concepts or the KG's names and synonyms; a prediction through the concept id the system gave it or
its name. Concept sets are closed under the KG's cross-references (equivalent ids of one disease).

- strict: a prediction is one of the gold concepts (or an equivalent); a gold label that names a class of diseases
  rather than one disease ("Fungal infection", "Arthritis": written ``{kind_of: [...]}`` in ``labels.yaml``, an id
  with the suffix ``*`` here) is also met by any disease under it ("tinea corporis", "osteoarthritis");
- lenient: ... or a direct parent or child of one (``is_a``), so "bacterial pneumonia" for "pneumonia" counts;
- a gold label that links to nothing falls back to normalised string comparison (strict: equal names; lenient:
  one name contains the other as whole words), and the record says so (``method="string"``).

MCQ: each option is linked the same way and the system's choice is the option met first in its differential
(strict before lenient before string); an answer that names a letter ("B", "B. Pneumonia") picks that option.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterable

from knowledge.kg.graph import first_match
from knowledge.kg.normalize import normalise

from .records import Case, Match, Prediction

_DISEASE = ("disease",)
KIND_OF = "*"   # suffix of a gold concept id that a label names as a class: the concept or any disease under it
_LETTER = re.compile(r"^\s*(?:\(?([A-J])[\).:]|option\s+([A-J])\b|answer\s*:?\s*([A-J])\b)\s*", re.IGNORECASE)
_ONLY_LETTER = re.compile(r"^\s*\(?([A-J])\)?\s*\.?\s*$", re.IGNORECASE)
# words that qualify rather than name a diagnosis: "possible NSTEMI", "acute exacerbation of ..." stays
_HEDGES = re.compile(r"^(?:possible|probable|suspected|likely|presumed|rule out|r/o)\s+", re.IGNORECASE)


def _key(text: str) -> str:
    return normalise(_HEDGES.sub("", text or ""))


def _contains_words(a: str, b: str) -> bool:
    """``b`` occurs in ``a`` as whole words (both already normalised)."""
    return bool(a and b) and f" {b} " in f" {a} "


class LabelMatcher:
    """Links diagnosis strings to KG disease concepts and ranks predictions against a gold label."""

    def __init__(self, kg: Any, aliases: dict[str, list[str]] | None = None):
        self.kg = kg
        self.aliases = {_key(k): list(v) for k, v in (aliases or {}).items()}
        self._link = lru_cache(maxsize=65536)(self._link_uncached)
        self._closure = lru_cache(maxsize=65536)(self._closure_uncached)
        self._family = lru_cache(maxsize=65536)(self._family_uncached)

    # ---- linking -------------------------------------------------------------------------------------------
    def _link_uncached(self, text: str) -> tuple[str, ...]:
        key = _key(text)
        if not key:
            return ()
        if key in self.aliases:
            return tuple(self.aliases[key])
        variants = [text, _HEDGES.sub("", text)]
        # "Bronchospasm / acute asthma exacerbation", "Pneumonia (community-acquired)": try the parts too
        variants += [p for p in re.split(r"\s*/\s*|\s*\(|\)\s*|\s+or\s+", text) if p and p.strip()]
        # every variant as written first, then the spellings a clinician's name differs by (KnowledgeGraph.resolve:
        # "Takotsubo" for "Tako-Tsubo", "... disorder" for "... syndrome", "exertional heat stroke" -> heat stroke)
        hits = first_match(self.kg, variants, categories=_DISEASE)
        if not hits:
            return ()
        best = [c.id for c in hits if c.name and normalise(c.name) == normalise(hits[0].name)] or [hits[0].id]
        return tuple(dict.fromkeys([hits[0].id, *best]))

    def link(self, text: str) -> list[str]:
        """Disease concept ids named by ``text`` (empty when it names none)."""
        return list(self._link(text or ""))

    def _closure_uncached(self, cid: str) -> frozenset[str]:
        if cid.endswith(KIND_OF):
            # a class label: the concept and every concept under it (is_a, any depth), each with its equivalents
            root = cid[:-len(KIND_OF)]
            out = {root, *self.kg.descendants(root)}
            return frozenset(out | {e for c in out for e in self.kg.equivalents(c)})
        return frozenset({cid, *self.kg.equivalents(cid)})

    def closure(self, ids: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for c in ids:
            out |= self._closure(c)
        return out

    def _family_uncached(self, cid: str) -> frozenset[str]:
        if cid.endswith(KIND_OF):   # a class label: its members (the closure) and the class's own parents
            return frozenset(self._closure(cid) | self.closure(self.kg.parents(cid[:-len(KIND_OF)])))
        near = {cid, *self.kg.parents(cid), *self.kg.children(cid)}
        return frozenset(self.closure(near))

    def family(self, ids: Iterable[str]) -> set[str]:
        """The concepts, their equivalents, and the direct parents and children of each."""
        out: set[str] = set()
        for c in self.closure(ids):
            out |= self._family(c)
        return out

    def gold_concepts(self, case: Case) -> list[str]:
        """The case's own gold concepts when it has them, else the linked label."""
        own = list((case.meta or {}).get("gold_concepts") or [])
        return own or self.link(case.label)

    def prediction_concepts(self, p: Prediction) -> set[str]:
        cid = p.get("concept_id")
        if cid:
            return self.closure([cid])
        return self.closure(self.link(p.get("diagnosis") or ""))

    # ---- ranking ------------------------------------------------------------------------------------------
    def match(self, case: Case, predictions: list[Prediction]) -> Match:
        gold = self.gold_concepts(case)
        unlinked = sum(1 for p in predictions if not self.prediction_concepts(p))
        if gold:
            strict, lenient = self.closure(gold), self.family(gold)
            s_rank = next((p["rank"] for p in predictions if self.prediction_concepts(p) & strict), None)
            l_rank = next((p["rank"] for p in predictions if self.prediction_concepts(p) & lenient), None)
            return Match(strict_rank=s_rank, lenient_rank=l_rank, method="concept", gold_concepts=sorted(gold),
                         unlinked_predictions=unlinked)
        g = _key(case.label)
        s_rank = next((p["rank"] for p in predictions if _key(p.get("diagnosis", "")) == g), None)
        l_rank = next((p["rank"] for p in predictions
                       if _contains_words(_key(p.get("diagnosis", "")), g)
                       or _contains_words(g, _key(p.get("diagnosis", "")))), None)
        return Match(strict_rank=s_rank, lenient_rank=l_rank, method="string", gold_concepts=[],
                     unlinked_predictions=unlinked)

    def choose_option(self, options: dict[str, str], predictions: list[Prediction],
                      answer_text: str = "") -> str | None:
        """The option letter the system's answer points at, or None when it points at none."""
        letters = {k.upper(): v for k, v in options.items()}
        m = _ONLY_LETTER.match(answer_text or "")
        if m and m.group(1).upper() in letters:
            return m.group(1).upper()
        for p in predictions:
            m = _LETTER.match(p.get("diagnosis") or "")
            if m:
                letter = next(g for g in m.groups() if g).upper()
                if letter in letters:
                    return letter
        linked = {k: self.closure(self.link(v)) for k, v in letters.items()}
        fam = {k: self.family(ids) for k, ids in linked.items() if ids}
        for level in ("strict", "lenient", "string"):
            for p in predictions:
                pc = self.prediction_concepts(p)
                pk = _key(p.get("diagnosis") or "")
                hits = []
                for k, v in letters.items():
                    if level == "strict" and pc and pc & linked[k]:
                        hits.append(k)
                    elif level == "lenient" and pc and k in fam and pc & fam[k]:
                        hits.append(k)
                    elif level == "string" and pk and (_contains_words(pk, _key(v)) or _contains_words(_key(v), pk)):
                        hits.append(k)
                if len(hits) == 1:
                    return hits[0]
        return None


def predictions_from_differential(differential: list[dict[str, Any]], k: int = 10) -> list[Prediction]:
    """The ranked predictions of a pipeline/direct result's differential (at most ``k``)."""
    out: list[Prediction] = []
    for i, d in enumerate(differential[:k], 1):
        out.append(Prediction(rank=i, diagnosis=str(d.get("diagnosis") or ""), concept_id=d.get("concept_id")))
    return out
