"""The commonness prior of the differential: a conditional-logit model fitted on benchmark development cases.

A differential ranked on findings and text alone puts familial Mediterranean fever above influenza for "fever, dry
cough, muscle aches": nothing in the fusion knows that one is met every winter and the other rarely. The prior adds
that knowledge from open data (:mod:`knowledge.prior`: consumer health pages, drug indications, literature symptom
profiles, ICD-10-CM chapter, Disease Ontology rare-disease subset, HPO-only status, ...) with *fitted*, not guessed,
weights.

Model: for the candidates ``i`` of one case, utility ``u_i = sum_j beta_j * z_ij`` where ``z`` are the
standardised features — those of the fusion (the candidate's fused score relative to the case's best, the log of
its fused rank, and optionally where each ranking the fusion combined put it, :data:`RANK_FEATURES`), one of the
evidence (the share of the findings it explains, relative to the case's best explainer; :data:`EVIDENCE_FEATURES`)
and the commonness features of its disease. P(i is the diagnosis | the case's candidates) =
softmax(u)_i. ``beta`` maximises the log-likelihood of the gold candidates of development cases (a case with
several gold candidates, e.g. two ids of one disease, counts P(any of them)) with an L2 penalty
(:func:`fit_conditional_logit`, ``benchmarks/fit_prior.py``). The weights, the standardisation and their provenance
are ``agents/data/commonness_prior.json``.

Applied (:meth:`CommonnessPrior.rescore`, called by HKI after the rank fusion): ``u_i = fusion part + evidence
part + prior_weight * prior part``; candidates are re-ordered by ``u`` and get ``softmax(u)`` as their score, with the
reason in their explanation ("commonness prior +1.30 (raised by: consumer health pages (MedlinePlus); ICD-10-CM
chapter: respiratory system)"). Age and sex stay where they were, a soft factor of the KG ranker
(``ranker.demographic_factor``).
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .types import Candidate

DATA_FILE = Path(__file__).resolve().parent / "data" / "commonness_prior.json"
MODEL_FORMAT = 1
FUSION_FEATURES = ("fusion_score", "fusion_log_rank")
# where each ranking the fusion combined put the candidate: 1 / (k + rank) per ranking (0: that ranking did not name
# it), k the fusion's constant. Optional, right after the fusion features and part of the fusion part: with them the
# fit weighs the KG, text, page, site and sign rankings itself instead of taking the fusion's fixed weights.
RANKINGS = ("kg", "text", "page", "site", "sign")
RANK_FEATURES = tuple(f"rr_{r}" for r in RANKINGS)
RANK_K = 3.0     # the fusion's default constant (HKIConfig.fusion_k), fixed so a fitted model's features stay put
# what the knowledge graph says a candidate explains of this presentation: the share of the presentation's findings
# it explains relative to the candidate of the case that explains most, and how many findings it expects that the
# patient does not have (denied, or the opposite present). Optional, after the fusion features; with them they make
# the case part of the utility (the rest is the commonness part, the "commonness prior" of the explanation).
EVIDENCE_FEATURES = ("explained_rel", "contradicted")
CASE_FEATURES = (*FUSION_FEATURES, *RANK_FEATURES, *EVIDENCE_FEATURES)


def fusion_values(candidates: Sequence[Candidate]) -> list[list[float]]:
    """The fusion features of a case's candidates, in their fused order: score / best score, log(rank). Candidates
    with the same fused score share a rank (1 + the number scored higher): the order of a tie is arbitrary (a
    disease first in the KG ranking and one first in the page ranking fuse to the same score) and must not move
    either of them."""
    top = max((c.score for c in candidates), default=0.0) or 1.0
    scores = [c.score for c in candidates]
    return [[c.score / top, math.log(1 + sum(1 for x in scores if x > c.score))] for c in candidates]


def rank_values(candidates: Sequence[Candidate]) -> list[list[float]]:
    """The rank features of a case's candidates: 1 / (:data:`RANK_K` + rank) in each ranking of
    :data:`RANKINGS` that named the candidate (``Candidate.ranks``), 0 in the others."""
    return [[1.0 / (RANK_K + c.ranks[r]) if c.ranks.get(r) else 0.0 for r in RANKINGS] for c in candidates]


def evidence_values(candidates: Sequence[Candidate]) -> list[list[float]]:
    """The evidence features of a case's candidates: findings explained / the most any candidate of the case
    explains (0 when none explains any), and the number of findings each expects that the patient does not have."""
    best = max((len(c.matched) for c in candidates), default=0)
    return [[len(c.matched) / best if best else 0.0, float(len(c.contradicted))] for c in candidates]


def _leading(names: Sequence[str], group: Sequence[str]) -> int:
    """How many of the leading ``names`` belong to ``group``."""
    n = 0
    while n < len(names) and names[n] in group:
        n += 1
    return n


def n_fusion_features(names: Sequence[str]) -> int:
    """How many of the leading ``names`` make the fusion part (the fusion features, then any rank features)."""
    return _leading(names, (*FUSION_FEATURES, *RANK_FEATURES))


def n_case_features(names: Sequence[str]) -> int:
    """How many of the leading ``names`` are case features (fusion, then evidence): the rest is commonness."""
    return _leading(names, CASE_FEATURES)


def feature_rows(features: Any, candidates: Sequence[Candidate], names: Sequence[str]) -> np.ndarray:
    """Raw (unstandardised) feature rows of a case's candidates (in fused order) for the feature ``names``: the
    fusion features (:data:`FUSION_FEATURES`), the evidence features (:data:`EVIDENCE_FEATURES`) and the
    commonness features of ``features`` (a :class:`knowledge.prior.PriorFeatures`)."""
    from knowledge.prior import FEATURES  # noqa: PLC0415

    idx = [FEATURES.index(n) if n in FEATURES else None for n in names]
    case = [[*f, *r, *e] for f, r, e in zip(fusion_values(candidates), rank_values(candidates),
                                            evidence_values(candidates))]
    out = []
    for c, own in zip(candidates, case):
        v = features.vector(c.concept_id)
        out.append([own[CASE_FEATURES.index(n)] if i is None else v[i] for n, i in zip(names, idx)])
    return np.asarray(out, dtype=float).reshape(len(candidates), len(names))


# ---- fitting ------------------------------------------------------------------------------------------------

@dataclass
class FitResult:
    beta: np.ndarray
    nll: float                 # mean negative log-likelihood per case, without the penalty
    nll_start: float           # ... at beta = 0 (every candidate equally likely)
    iterations: int
    converged: bool
    cases: int


def _objective(beta: np.ndarray, xs: Sequence[np.ndarray], golds: Sequence[np.ndarray], l2: float,
               penalise: np.ndarray) -> tuple[float, np.ndarray, float]:
    """Penalised mean NLL, its gradient, and the unpenalised mean NLL."""
    total, grad = 0.0, np.zeros_like(beta)
    for x, g in zip(xs, golds):
        u = x @ beta
        u = u - u.max()
        e = np.exp(u)
        p = e / e.sum()
        pg = p[g]
        sg = pg.sum()
        total -= math.log(max(sg, 1e-300))
        # d/dbeta [-log sum_g p_g] = E_p[x] - E_{p restricted to gold}[x]
        grad += p @ x - (pg / sg) @ x[g]
    n = max(len(xs), 1)
    nll = total / n
    pen = 0.5 * l2 * float(np.sum((beta * penalise) ** 2))
    return nll + pen, grad / n + l2 * beta * penalise, nll


def fit_conditional_logit(xs: Sequence[np.ndarray], golds: Sequence[Sequence[int]], l2: float = 0.01,
                          penalise: Sequence[bool] | None = None, max_iter: int = 500,
                          tol: float = 1e-7) -> FitResult:
    """Fit ``beta`` of a conditional logit: case ``c`` has candidate feature rows ``xs[c]`` (n_c x d) and gold
    candidate indices ``golds[c]``; minimises mean_c -log sum_{g in golds[c]} softmax(xs[c] @ beta)_g
    + l2/2 * ||beta * penalise||^2 by BFGS with a backtracking line search (numpy only). Cases without a gold
    candidate carry no information and are skipped."""
    pairs = [(np.asarray(x, dtype=float), np.asarray(sorted(set(g)), dtype=int)) for x, g in zip(xs, golds)
             if len(g) and len(x)]
    if not pairs:
        raise ValueError("no case has a gold candidate: nothing to fit")
    d = pairs[0][0].shape[1]
    xs_, gs_ = [p[0] for p in pairs], [p[1] for p in pairs]
    pen = np.ones(d) if penalise is None else np.asarray(penalise, dtype=float)
    beta = np.zeros(d)
    f, grad, nll0 = _objective(beta, xs_, gs_, l2, pen)
    h_inv = np.eye(d)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        step = -h_inv @ grad
        if grad @ step >= 0:            # not a descent direction: restart from the gradient
            h_inv = np.eye(d)
            step = -grad
        t = 1.0
        while True:
            cand = beta + t * step
            f_new, g_new, _ = _objective(cand, xs_, gs_, l2, pen)
            if f_new <= f + 1e-4 * t * (grad @ step) or t < 1e-10:
                break
            t *= 0.5
        s, y = cand - beta, g_new - grad
        beta, f_old, f, grad = cand, f, f_new, g_new
        if np.linalg.norm(grad, ord=np.inf) < tol or abs(f_old - f) < tol * max(1.0, abs(f)):
            converged = True
            break
        sy = float(s @ y)
        if sy > 1e-12:
            rho = 1.0 / sy
            eye = np.eye(d)
            h_inv = (eye - rho * np.outer(s, y)) @ h_inv @ (eye - rho * np.outer(y, s)) + rho * np.outer(s, s)
    _, _, nll = _objective(beta, xs_, gs_, l2, pen)
    return FitResult(beta=beta, nll=nll, nll_start=nll0, iterations=it, converged=converged, cases=len(pairs))


# ---- the fitted model ---------------------------------------------------------------------------------------

_PHRASES: dict[str, tuple[str, str]] = {   # feature -> (when present, when absent); {n} = count, {orgs}
    "consumer_page": ("consumer health pages ({consumer})", "no consumer health page"),
    "institute_page": ("NIH institute fact sheets ({institute})", "no NIH institute fact sheet"),
    "rare_pages_only": ("only rare/genetic disease pages (GARD/GHR)", ""),
    "drug_indications": ("{drugs} drug indications", "no drug indication on record"),
    "hsdn_symptoms": ("a literature symptom profile (HSDN, {hsdn} symptoms)", "no literature symptom profile"),
    "icd10cm": ("an ICD-10-CM code", "no ICD-10-CM code"),
    "do_rare_slim": ("in the Disease Ontology rare-disease subset", ""),
    "do_exposure": ("a zoonotic or tick-borne infection (Disease Ontology subset)", ""),
    "hpo_only": ("known only from rare-disease phenotype annotations (HPO)", ""),
    "rare_registry": ("listed by the rare-disease registry Orphanet", ""),
    "omim": ("a Mendelian disorder entry (OMIM)", ""),
    "kg_sources": ("described by {sources} knowledge sources", "described by {sources} knowledge sources"),
    "names": ("{names} names and synonyms", "{names} names and synonyms"),
}


@dataclass
class CommonnessPrior:
    """Fitted weights over the fusion and commonness features, with the feature table they apply to."""

    features: Any                       # knowledge.prior.PriorFeatures
    names: list[str]                    # feature names in weight order (case features first)
    weights: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any], features: Any) -> CommonnessPrior:
        if data.get("format") != MODEL_FORMAT:
            raise ValueError(f"commonness prior format {data.get('format')}, expected {MODEL_FORMAT}")
        names = list(data["features"])
        from knowledge.prior import FEATURES  # noqa: PLC0415

        unknown = [n for n in names if n not in FEATURES and n not in CASE_FEATURES]
        if unknown:
            raise ValueError(f"commonness prior: unknown features {unknown}")
        if not names or names[: len(FUSION_FEATURES)] != list(FUSION_FEATURES):
            raise ValueError(f"commonness prior: the features must start with {list(FUSION_FEATURES)}")
        if any(n in EVIDENCE_FEATURES for n in names[n_case_features(names):]):
            raise ValueError(f"commonness prior: the evidence features {list(EVIDENCE_FEATURES)} must follow the "
                             "fusion features")
        if any(n in RANK_FEATURES for n in names[n_fusion_features(names):]):
            raise ValueError(f"commonness prior: the rank features {list(RANK_FEATURES)} must follow the fusion "
                             "features, before the evidence features")
        vec = [np.asarray([float(data[k][n]) for n in names]) for k in ("weights", "mean", "scale")]
        if np.any(vec[2] <= 0):
            raise ValueError("commonness prior: every scale must be positive")
        meta = {k: v for k, v in data.items() if k not in ("weights", "mean", "scale")}
        return cls(features, names, vec[0], vec[1], vec[2], meta)

    @classmethod
    def load(cls, features: Any, path: Path | str | None = None) -> CommonnessPrior:
        """The model in ``path`` (default: the packaged ``data/commonness_prior.json``) over ``features``."""
        p = Path(path) if path is not None else DATA_FILE
        return cls.from_dict(json.loads(p.read_text(encoding="utf-8")), features)

    @property
    def provisional(self) -> bool:
        return bool(self.meta.get("provisional"))

    def digest(self) -> str:
        """A short hash of the model (features, weights, standardisation): two runs with the same digest used
        the same prior."""
        blob = json.dumps([self.names, *(np.round(v, 6).tolist() for v in (self.weights, self.mean, self.scale))])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        """What a run manifest records about the prior it used."""
        prov = self.meta.get("provenance") or {}
        return {"digest": self.digest(), "provisional": self.provisional, "fitted_at": prov.get("date"),
                "split": prov.get("split"), "cases": prov.get("cases"), "code_version": prov.get("code_version"),
                "feature_table": getattr(self.features, "version", None)}

    def rows(self, candidates: Sequence[Candidate]) -> np.ndarray:
        """Raw (unstandardised) feature rows of a case's candidates, in :attr:`names` order."""
        return feature_rows(self.features, candidates, self.names)

    def _split(self, candidates: Sequence[Candidate]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per candidate: the fusion part, the evidence part, the commonness part, and the commonness part per
        feature."""
        z = (self.rows(candidates) - self.mean) / self.scale
        contrib = z * self.weights
        nfus, nf = n_fusion_features(self.names), n_case_features(self.names)
        return (contrib[:, :nfus].sum(axis=1), contrib[:, nfus:nf].sum(axis=1), contrib[:, nf:].sum(axis=1),
                contrib[:, nf:])

    def prior_logits(self, candidates: Sequence[Candidate]) -> list[float]:
        """The commonness part of each candidate's utility (0 = an average candidate of the fit)."""
        return [float(x) for x in self._split(candidates)[2]] if candidates else []

    def rescore(self, candidates: Sequence[Candidate], weight: float = 1.0, monotone: bool = False
                ) -> list[Candidate]:
        """The candidates (in fused order) re-ordered by fusion part + evidence part + ``weight`` * prior part, each
        scored with its share of the softmax over the list, the prior's reason appended to its explanation (and,
        when the evidence part moved it, that reason too). ``monotone``: a
        candidate's fusion part is capped at that of every candidate fused above it — the fitted weight on the log
        rank is positive, so without the cap a candidate gains by being fused one place lower at the same score."""
        if not candidates:
            return []
        fus, evi, pri, parts = self._split(candidates)
        if monotone:
            fus = np.minimum.accumulate(fus)
        u = fus + evi + weight * pri
        p = np.exp(u - u.max())
        p /= p.sum()
        order = sorted(range(len(candidates)), key=lambda i: (-u[i], i))
        out = []
        for i in order:
            c = candidates[i]
            why = self.reason(c.concept_id, weight * pri[i], weight * parts[i])
            if abs(evi[i]) > 0.05:
                why = f"{why}; what it explains of the findings {evi[i]:+.2f}"
            out.append(c.model_copy(update={"score": round(float(p[i]), 4),
                                            "explanation": (f"{c.explanation}; {why}" if c.explanation else why)}))
        return out

    def reason(self, cid: str, logit: float, parts: np.ndarray, most: int = 3) -> str:
        """"commonness prior +1.20 (raised by: consumer health pages (MedlinePlus); 40 drug indications)": the
        total and the features that moved the candidate most in its direction (what the fitted model did, not a
        verdict on the disease's frequency)."""
        from knowledge.prior import CONSUMER_ORGS, INSTITUTE_ORGS, chapter_title  # noqa: PLC0415

        facts = self.features.facts(cid)
        pages = facts.get("pages") or []
        label = {"MPlusHealthTopics": "MedlinePlus", "NIHSeniorHealth": "NIHSeniorHealth"}
        fill = {"consumer": ", ".join(label.get(o, o) for o in pages if o in CONSUMER_ORGS),
                "institute": ", ".join(o for o in pages if o in INSTITUTE_ORGS),
                "drugs": facts.get("drugs", 0), "hsdn": facts.get("hsdn", 0), "sources": facts.get("sources", 0),
                "names": facts.get("names", 0)}
        nf = n_case_features(self.names)
        raw = self.features.values(cid) if cid in self.features else {}
        sign = 1.0 if logit >= 0 else -1.0
        said: list[str] = []
        for j in sorted(range(len(parts)), key=lambda j: -sign * parts[j]):
            if sign * parts[j] <= 0.05 or len(said) >= most:
                break
            name = self.names[nf + j]
            present = raw.get(name, 0.0) > 0
            if name.startswith("icd_ch"):
                text = f"ICD-10-CM chapter: {chapter_title(int(name[6:]))}" if present else ""
            else:
                text = _PHRASES.get(name, (name, ""))[0 if present else 1]
            if text:
                said.append(text.format(**fill))
        kind = "raised by" if logit >= 0 else "lowered by"
        return f"commonness prior {logit:+.2f}" + (f" ({kind}: {'; '.join(said)})" if said else "")
