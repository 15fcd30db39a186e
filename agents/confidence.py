"""Diagnostic confidence: how likely each ranked diagnosis is to be the patient's diagnosis.

This is a different question from verification. The verifier asks whether every claim of the answer is carried by
the evidence it cites ("claims supported"); an answer can be fully supported and still name the wrong disease. Here
each item of the differential gets P(this item is the correct diagnosis), from what the run knows at its end:

* :func:`item_features` — compact features of one ranked item: its rank, its fused score relative to the top
  candidate's and its lead over the next one, how many of the patient's current findings it explains
  (:attr:`~agents.types.Candidate.matched` against :func:`agents.ranker.ranking_findings`), how many absent
  findings it expects, and its rank in each of the rankings HKI fused (knowledge graph, reference chunks, disease
  pages; :attr:`~agents.types.Candidate.ranks`). Candidates may be pydantic models or their dumps, and fields
  they lack count as absent, so a candidate of a new kind (e.g. proposed by a language model, with no knowledge-graph
  match) still gets features — those of an item nothing supports.
* :class:`Calibration` — a logistic (Platt-style) model over :func:`design_row` of those features, fitted on the
  development halves of the benchmarks (``benchmarks/fit_confidence.py``), its parameters and their provenance in
  ``agents/data/diagnostic_confidence.json``. Without that file, :func:`load_calibration` returns ``None`` and the
  result says "uncalibrated" instead of a number.
* :func:`assess` — the per-item probabilities of a differential (never rising down the ranking), the level of the
  top one, and how many findings the leading items explain together.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .ranker import ranking_findings

CALIBRATION_FILE = Path(__file__).resolve().parent / "data" / "diagnostic_confidence.json"
UNCALIBRATED = "uncalibrated"

# levels of the calibrated probability that the top item is the diagnosis
LEVEL_HIGH = 0.5        # more likely right than wrong
LEVEL_MODERATE = 0.2    # between: plausible, far from established; below: low

# the design (model inputs) computed from the stored features; a model file names the ones it uses
DESIGN = ("log_rank", "rel_top", "gap_next", "explained", "contradicted", "rr_kg", "rr_text", "rr_page",
          "ranked")
RANKINGS = ("kg", "text", "page")
# the direction each input can move the probability in: a fitted coefficient of the other sign (a quirk of few
# development cases, e.g. the rare contradicted findings) removes that input from the model
EXPECTED_SIGN = {"log_rank": -1, "rel_top": 1, "gap_next": 1, "explained": 1, "contradicted": -1, "rr_kg": 1,
                 "rr_text": 1, "rr_page": 1, "ranked": 1}
# linked entities the ranking receives but cannot match to a disease: anatomical sites ("throat") are context
NOT_FINDINGS = ("UBERON:",)


# ---- features -------------------------------------------------------------------------------------------------

def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        value = obj.get(name, default)
    else:
        value = getattr(obj, name, default)
    return default if value is None else value


def _num(value: Any, default: float = 0.0) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return default
    return out if math.isfinite(out) else default


def current_finding_ids(extraction: Any) -> list[str]:
    """The distinct concept ids of the findings of the present illness the ranking used
    (:func:`agents.ranker.ranking_findings`), anatomical sites left out (:data:`NOT_FINDINGS`); [] without an
    extraction. Accepts an Extraction or its dump."""
    if extraction is None:
        return []
    if isinstance(extraction, Mapping):
        from .types import Extraction  # noqa: PLC0415

        try:
            extraction = Extraction.model_validate(extraction)
        except Exception:  # noqa: BLE001 - an unreadable extraction explains nothing
            return []
    positive, _ = ranking_findings(extraction)
    return list(dict.fromkeys(e.concept_id for e in positive
                              if e.concept_id and not e.concept_id.startswith(NOT_FINDINGS)))


def _rank_table(candidate: Any, position: int) -> dict[str, int]:
    """The candidate's rank in each fused ranking. Without recorded ranks, a candidate with matched findings came from
    the knowledge-graph ranking (its position is the best estimate of that rank)."""
    ranks = _get(candidate, "ranks", {}) or {}
    out = {k: int(_num(ranks.get(k))) for k in RANKINGS if isinstance(ranks, Mapping) and _num(ranks.get(k)) >= 1}
    if not out and _get(candidate, "matched", []):
        out["kg"] = position
    return out


def item_features(rank: int, concept_id: str | None, candidates: Sequence[Any],
                  findings: Sequence[str]) -> dict[str, Any]:
    """Compact features of the differential item at ``rank`` (1-based) naming ``concept_id``, given the run's ranked
    ``candidates`` (models or dicts, best first) and the current finding ids. Keys: ``rank``, ``cand`` (its position
    among the candidates, 0 when it is not one), ``rel`` (its score / the top candidate's), ``gap`` ((its score - the
    next rival candidate's) / the top's; the parent a subtype was named before is not its rival), ``matched``
    (findings it explains), ``findings`` (how many there are), ``contra`` (absent findings it expects),
    ``kg``/``text``/``page`` (its rank in each fused ranking, 0: absent)."""
    feats: dict[str, Any] = {"rank": int(rank), "cand": 0, "rel": 0.0, "gap": 0.0, "matched": 0,
                             "findings": len(findings), "contra": 0, "kg": 0, "text": 0, "page": 0}
    pos = next((i for i, c in enumerate(candidates) if concept_id and _get(c, "concept_id") == concept_id), None)
    if pos is None:
        return feats
    cand = candidates[pos]
    top = _num(_get(candidates[0], "score"))
    score = _num(_get(cand, "score"))
    # the next candidate that is a rival: a subtype named before its parent (``subtype_of``) does not compete with it
    parent = _get(cand, "subtype_of") or None
    rival = next((c for c in candidates[pos + 1:] if not parent or _get(c, "concept_id") != parent), None)
    nxt = _num(_get(rival, "score")) if rival is not None else 0.0
    wanted = set(findings)
    feats.update(cand=pos + 1,
                 rel=round(score / top, 4) if top > 0 else 0.0,
                 gap=round(max(score - nxt, 0.0) / top, 4) if top > 0 else 0.0,
                 matched=len(wanted & set(_get(cand, "matched", []) or [])),
                 contra=len(_get(cand, "contradicted", []) or []))
    feats.update(_rank_table(cand, pos + 1))
    return feats


def differential_features(differential: Sequence[Any], candidates: Sequence[Any],
                          extraction: Any) -> list[dict[str, Any]]:
    """:func:`item_features` of every item of a differential (DifferentialItem models or dicts), in order."""
    findings = current_finding_ids(extraction)
    return [item_features(int(_get(d, "rank", i)), _get(d, "concept_id"), candidates, findings)
            for i, d in enumerate(differential, 1)]


def design_row(feats: Mapping[str, Any], names: Sequence[str] = DESIGN) -> list[float]:
    """The model inputs of one item's features (missing features count as absent): log rank, relative score, lead
    over the next candidate, share of the findings explained, expected-but-absent findings (up to 3), the reciprocal
    rank in each fused ranking, and whether the item is a ranked candidate at all."""
    rank = max(_num(feats.get("rank"), 1.0), 1.0)
    n = _num(feats.get("findings"))
    values = {
        "log_rank": math.log(rank),
        "rel_top": min(max(_num(feats.get("rel")), 0.0), 1.0),
        "gap_next": min(max(_num(feats.get("gap")), 0.0), 1.0),
        "explained": min(_num(feats.get("matched")) / n, 1.0) if n > 0 else 0.0,
        "contradicted": min(_num(feats.get("contra")), 3.0),
        "ranked": 1.0 if _num(feats.get("cand")) >= 1 else 0.0,
    }
    for k in RANKINGS:
        r = _num(feats.get(k))
        values[f"rr_{k}"] = 1.0 / r if r >= 1 else 0.0
    return [values.get(name, 0.0) for name in names]


# ---- the calibrator -----------------------------------------------------------------------------------------

def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@dataclass(frozen=True)
class Calibration:
    """P(item is the diagnosis) = sigmoid(intercept + coef · (design - mean) / scale), the design being
    :func:`design_row` of the item's features."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    provenance: dict[str, Any] = field(default_factory=dict)
    l2: float = 1.0

    def __post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.coef) == n):
            raise ValueError("a calibration needs one mean, scale and coefficient per feature")
        unknown = [f for f in self.features if f not in DESIGN]
        if unknown:
            raise ValueError(f"unknown calibration feature(s): {', '.join(unknown)}")

    def logit(self, feats: Mapping[str, Any]) -> float:
        x = design_row(feats, self.features)
        return self.intercept + sum(c * (v - m) / (s or 1.0)
                                    for c, v, m, s in zip(self.coef, x, self.mean, self.scale))

    def predict(self, feats: Mapping[str, Any]) -> float:
        """The calibrated probability that the item with these features is the correct diagnosis."""
        return _sigmoid(self.logit(feats))

    def label(self) -> str:
        """What the result says about where the probabilities come from."""
        p = self.provenance or {}
        sets = p.get("datasets") or {}
        notes = [", ".join(f"{k} {v}" for k, v in sets.items()) + " cases" if isinstance(sets, Mapping) and sets
                 else str(sets or "")]
        notes += [str(p.get("date") or "")[:10], "provisional" if p.get("status") == "provisional" else ""]
        notes = [n for n in notes if n]
        return f"logistic fit on {p.get('split', 'dev')} split" + (f" ({'; '.join(notes)})" if notes else "")

    def to_json(self) -> dict[str, Any]:
        return {"model": "logistic", "version": 1, "features": list(self.features), "mean": list(self.mean),
                "scale": list(self.scale), "coef": list(self.coef), "intercept": self.intercept, "l2": self.l2,
                "provenance": self.provenance}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Calibration":
        if data.get("model") != "logistic":
            raise ValueError(f"unknown calibration model {data.get('model')!r}")
        return cls(features=tuple(data["features"]), mean=tuple(float(x) for x in data["mean"]),
                   scale=tuple(float(x) for x in data["scale"]), coef=tuple(float(x) for x in data["coef"]),
                   intercept=float(data["intercept"]), provenance=dict(data.get("provenance") or {}),
                   l2=float(data.get("l2", 1.0)))


_CACHE: dict[str, tuple[float, Calibration | None]] = {}


def calibration_path() -> Path:
    """``$CLINICALRAG_CONFIDENCE_FILE`` when set (an empty value: no calibration), else the packaged file."""
    env = os.environ.get("CLINICALRAG_CONFIDENCE_FILE")
    if env is not None:
        return Path(env).expanduser() if env.strip() else Path("")
    return CALIBRATION_FILE


def load_calibration(path: str | Path | None = None) -> Calibration | None:
    """The calibration in ``path`` (default :func:`calibration_path`), or None when there is no such file (the
    "uncalibrated" state). A file that exists but cannot be read raises ``ValueError``: a broken calibration must
    not pass for a missing one."""
    p = Path(path) if path is not None else calibration_path()
    if not str(p) or str(p) == "." or not p.is_file():
        return None
    key = str(p.resolve())
    mtime = p.stat().st_mtime
    hit = _CACHE.get(key)
    if hit is not None and hit[0] == mtime:
        return hit[1]
    try:
        cal = Calibration.from_json(json.loads(p.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{p}: not a diagnostic-confidence calibration ({exc})") from exc
    _CACHE[key] = (mtime, cal)
    return cal


def fit_logistic(rows: Sequence[Sequence[float]], labels: Sequence[int], *, l2: float = 1.0, standardise: bool = False,
                 max_iter: int = 100, tol: float = 1e-9) -> tuple[list[float], list[float], list[float], float]:
    """L2-regularised logistic regression by Newton's method on centred inputs (the intercept is not penalised).
    Returns (mean, scale, coef, intercept). The inputs of :func:`design_row` are on comparable scales (mostly
    [0, 1]), so by default they are not standardised: a rare binary input standardised would get a huge scale-free
    coefficient from a handful of cases. A constant column gets coefficient 0 through the penalty; all-equal labels
    give coefficients 0 and the intercept of their (smoothed) rate."""
    import numpy as np  # noqa: PLC0415

    x = np.asarray(rows, dtype=float)
    y = np.asarray(labels, dtype=float)
    if x.ndim != 2 or len(x) != len(y) or not len(y):
        raise ValueError("fit_logistic needs a non-empty matrix of rows and one label per row")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("labels must be 0 or 1")
    mean = x.mean(axis=0)
    scale = x.std(axis=0) if standardise else np.ones(x.shape[1])
    scale[scale < 1e-9] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    penalty = np.full(z.shape[1], float(l2))
    penalty[0] = 0.0
    rate = (y.sum() + 0.5) / (len(y) + 1.0)
    w = np.zeros(z.shape[1])
    w[0] = math.log(rate / (1 - rate))
    if 0 < y.sum() < len(y):
        for _ in range(max_iter):
            p = 1.0 / (1.0 + np.exp(-(z @ w)))
            grad = z.T @ (p - y) + penalty * w
            hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
            step = np.linalg.solve(hess, grad)
            w -= step
            if float(np.abs(step).max()) < tol:
                break
    return mean.tolist(), scale.tolist(), w[1:].tolist(), float(w[0])


def fit_calibration(features: Iterable[Mapping[str, Any]], labels: Iterable[int], *, l2: float = 1.0,
                    names: Sequence[str] = DESIGN, provenance: Mapping[str, Any] | None = None,
                    signs: Mapping[str, int] | None = EXPECTED_SIGN) -> Calibration:
    """A :class:`Calibration` fitted on item features (:func:`item_features`) and 0/1 labels (1: the item is the
    correct diagnosis). With ``signs``, an input whose coefficient comes out against its expected sign is dropped
    (the one furthest off first) and the model refitted, until every coefficient agrees; inputs that do not vary
    (coefficient 0) are dropped too."""
    feats = list(features)
    labels = list(labels)
    names = list(names)
    while True:
        rows = [design_row(f, names) for f in feats]
        mean, scale, coef, intercept = fit_logistic(rows, labels, l2=l2)
        wrong = [(abs(c), n) for n, c in zip(names, coef)
                 if abs(c) < 1e-9 or (signs and signs.get(n, 0) * c < 0)]
        if not wrong or len(names) == 1:
            break
        names.remove(max(wrong)[1])
    return Calibration(features=tuple(names), mean=tuple(round(v, 6) for v in mean),
                       scale=tuple(round(v, 6) for v in scale), coef=tuple(round(v, 6) for v in coef),
                       intercept=round(intercept, 6), provenance=dict(provenance or {}), l2=l2)


# ---- a run's assessment -------------------------------------------------------------------------------------

def level_of(p: float | None) -> str:
    """"high" / "moderate" / "low" for a calibrated probability; "unknown" without one."""
    if p is None:
        return "unknown"
    return "high" if p >= LEVEL_HIGH else "moderate" if p >= LEVEL_MODERATE else "low"


def explained_by(items: Sequence[Any], candidates: Sequence[Any], findings: Sequence[str]) -> int:
    """How many of ``findings`` the candidates named by ``items`` (differential items) explain together."""
    wanted = set(findings)
    ids = {_get(d, "concept_id") for d in items} - {None}
    got: set[str] = set()
    for c in candidates:
        if _get(c, "concept_id") in ids:
            got |= wanted & set(_get(c, "matched", []) or [])
    return len(got)


@dataclass
class Assessment:
    """The diagnostic confidence of one run's differential."""

    confidences: list[float | None]        # per differential item, in order (None: uncalibrated)
    features: list[dict[str, Any]]
    findings: int                          # current findings with a concept id
    top_explained: int                     # of them, explained by the top item
    lead_explained: int                    # ... by the leading ``lead`` items together
    lead: int
    calibration: str                       # Calibration.label() or "uncalibrated"

    @property
    def top(self) -> float | None:
        return self.confidences[0] if self.confidences else None

    @property
    def level(self) -> str:
        return level_of(self.top)

    def block(self) -> dict[str, Any]:
        """The result's ``diagnostic_confidence`` block."""
        return {"top": None if self.top is None else round(self.top, 4), "level": self.level,
                "explained": f"{self.top_explained} of {self.findings} findings",
                "explained_by_leading": f"{self.lead_explained} of {self.findings} findings (top {self.lead})",
                "findings": self.findings, "top_explains": self.top_explained,
                "leading_explain": self.lead_explained, "leading": self.lead, "calibration": self.calibration}


def assess(differential: Sequence[Any], candidates: Sequence[Any], extraction: Any, *,
           calibration: Calibration | None, lead: int = 3) -> Assessment:
    """Per-item calibrated probabilities of a differential (None each without a calibration), made non-increasing
    down the ranking (an item is never shown as more likely than the one above it), and the findings the top
    item and the leading ``lead`` items explain."""
    findings = current_finding_ids(extraction)
    feats = [item_features(int(_get(d, "rank", i)), _get(d, "concept_id"), candidates, findings)
             for i, d in enumerate(differential, 1)]
    confs: list[float | None] = []
    if calibration is not None:
        ceiling = 1.0
        for f in feats:
            ceiling = min(ceiling, calibration.predict(f))
            confs.append(ceiling)
    else:
        confs = [None] * len(feats)
    return Assessment(confidences=confs, features=feats, findings=len(findings),
                      top_explained=explained_by(differential[:1], candidates, findings),
                      lead_explained=explained_by(differential[:lead], candidates, findings), lead=lead,
                      calibration=calibration.label() if calibration is not None else UNCALIBRATED)
