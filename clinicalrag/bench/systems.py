"""The systems a benchmark compares, named by short specs.

A spec is a base name, then optional modifiers after a colon, comma-separated:

- ``pipeline`` — the full agent graph (with the configured LLM, or deterministic agents without one);
- ``direct`` — the LLM alone, no retrieval (needs an LLM);
- ``bm25`` — the plain-text baseline: BM25 over the disease pages (:mod:`knowledge.disease_pages`: one page per
  KG disease, all its reference answers joined; the presentation is the query), no agents, no LLM;
- ``ranker`` — the knowledge-graph ranker alone on the extractor's findings (no text retrieval, no LLM);
  ``ranker:gold-findings`` ranks the finding phrases a case lists (the hand-written cases) instead, to measure the
  ranker without extraction errors.

Modifiers (pipeline): ``no-mee``, ``no-knl``, ``no-krg``, ``no-verifier`` (the paper's ablations), ``no-pages``
(no disease-page text ranking in the differential), ``no-prior`` (no commonness prior: the differential in fusion
order), ``no-mined`` (the ranker without the disease -> finding edges mined from MedQuAD), ``no-sites`` (no ranking of
the diseases of the organs under a localised pain), ``no-signs`` (no ranking of the diseases
classic signs point to), ``no-cardinal`` (the ranker without the curated cardinal findings of common diseases),
``no-opposites`` (a present finding no longer argues against a disease expecting its opposite), ``no-risk-factors``
(stated exposures no longer raise the candidates they make likelier), ``no-subtypes`` (a subtype the findings single
out is no longer named before its parent disease), ``no-against`` (a finding that argues against a disease, such as a
fever against allergic rhinitis, no longer moves it down), ``no-others`` (a relative's disease or a contact's infection
no longer raises the same disease), ``no-needs`` (a disease seldom seen without an exposure the history does not state,
such as Q fever without farm animals, is only marked, not moved down), ``no-fold-empty`` (a broader term with no
evidence of its own, "paranasal sinus disease" beside sinusitis, is no longer folded into its kind), ``no-llm`` (the
deterministic pipeline even when an LLM is configured), ``cap=N`` (input length cap, tokens), ``src=G|B|O|GB|...``
(knowledge sources), and any :class:`graph.config.PipelineConfig` field as ``field=value``
(``differential_k=10``; a list setting joins its items with "+": ``llm_agents=propose+generate``, ``none`` for
an empty list). Example: ``pipeline:no-mee,cap=2048``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from graph.config import PipelineConfig

BASES = ("pipeline", "direct", "bm25", "ranker")
_FLAGS = {"no-mee": ("use_mee", False), "no-knl": ("use_knl", False), "no-krg": ("use_krg", False),
          "no-verifier": ("use_verifier", False), "no-pages": ("use_pages", False),
          "no-prior": ("use_prior", False), "no-mined": ("use_mined_edges", False),
          "no-sites": ("use_sites", False), "no-signs": ("use_signs", False),
          "no-cardinal": ("use_cardinal", False), "no-opposites": ("use_opposites", False),
          "no-risk-factors": ("use_risk_factors", False), "no-subtypes": ("use_subtypes", False),
          "no-against": ("use_against", False), "no-others": ("others_as_exposures", False),
          "no-needs": ("unexposed_factor", 1.0), "no-fold-empty": ("fold_empty_broader", False)}
ABLATIONS = ("pipeline:no-mee", "pipeline:no-knl", "pipeline:no-krg", "pipeline:no-verifier", "pipeline:no-pages",
             "pipeline:no-prior", "pipeline:no-mined", "pipeline:no-sites",
             "pipeline:no-signs", "pipeline:no-cardinal", "pipeline:no-opposites", "pipeline:no-risk-factors",
             "pipeline:no-subtypes", "pipeline:no-against", "pipeline:no-others", "pipeline:no-needs",
             "pipeline:no-fold-empty")
INPUT_CAPS = ("pipeline:cap=2048", "pipeline:cap=1024")
SOURCE_SUBSETS = ("pipeline:src=G", "pipeline:src=BO")


class SpecError(ValueError):
    """A system spec that cannot be parsed."""


@dataclass(frozen=True)
class System:
    spec: str
    kind: Literal["pipeline", "direct", "bm25", "ranker"]
    overrides: dict[str, Any] = field(default_factory=dict)
    use_llm: bool = True           # False: never call the LLM even when one is configured
    gold_findings: bool = False    # ranker: the case's listed findings instead of the extractor's

    def config(self) -> PipelineConfig:
        return PipelineConfig(**({"mode": "direct"} if self.kind == "direct" else {}), **self.overrides)

    @property
    def needs_llm(self) -> bool:
        return self.kind == "direct"

    def describe(self) -> dict[str, Any]:
        cfg = self.config() if self.kind in ("pipeline", "direct") else None
        return {"kind": self.kind, "use_llm": self.use_llm and self.kind in ("pipeline", "direct"),
                "gold_findings": self.gold_findings, "overrides": self.overrides,
                "config": cfg.model_dump() if cfg else None, "config_hash": cfg.digest() if cfg else None}


def setting_value(field_name: str, raw: str) -> Any:
    """A pipeline setting's value from its text (bench specs, ``ask --set``); :class:`SpecError` for an unknown
    setting."""
    info = PipelineConfig.model_fields.get(field_name)
    if info is None:
        raise SpecError(f"unknown setting {field_name!r}; settings: {', '.join(PipelineConfig.model_fields)}")
    ann = info.annotation
    args = [a for a in getattr(ann, "__args__", ()) if a is not type(None)]
    if type(None) in getattr(ann, "__args__", ()) and len(args) == 1:    # an optional setting: "none" unsets it
        if raw.strip().lower() == "none":
            return None
        ann = args[0]
    if ann is bool:
        low = raw.lower()
        if low not in ("true", "false", "1", "0", "yes", "no"):
            raise SpecError(f"{field_name} takes true/false, not {raw!r}")
        return low in ("true", "1", "yes")
    if ann is int:
        return int(raw)
    if ann is float:
        return float(raw)
    if getattr(ann, "__origin__", None) is list:     # a list setting: items joined by "+" (llm_agents=propose+generate)
        return [x.strip() for x in raw.split("+") if x.strip()] if raw.strip().lower() != "none" else []
    return raw


def parse_system(spec: str) -> System:
    """The :class:`System` a spec names; :class:`SpecError` with the reason when it names none."""
    spec = spec.strip()
    base, _, mods = spec.partition(":")
    base = base.strip().lower()
    if base not in BASES:
        raise SpecError(f"unknown system {base!r} in {spec!r}; systems: {', '.join(BASES)}")
    overrides: dict[str, Any] = {}
    use_llm = True
    gold_findings = False
    for m in [m.strip() for m in mods.split(",") if m.strip()] if mods else []:
        if base == "bm25":
            raise SpecError(f"{spec!r}: the bm25 baseline takes no modifiers")
        if base == "ranker":
            if m.lower() != "gold-findings":
                raise SpecError(f"{spec!r}: the ranker takes one modifier, gold-findings")
            gold_findings = True
            continue
        key, eq, val = m.partition("=")
        key = key.strip().lower()
        if not eq:
            if key in _FLAGS:
                name, v = _FLAGS[key]
                overrides[name] = v
            elif key == "no-llm":
                use_llm = False
            else:
                raise SpecError(f"unknown modifier {m!r} in {spec!r}; flags: {', '.join([*_FLAGS, 'no-llm'])}")
            continue
        val = val.strip()
        try:
            if key == "cap":
                overrides["max_input_tokens"] = int(val)
            elif key == "src":
                overrides["sources"] = list(val.upper())
            else:
                overrides[key] = setting_value(key, val)
        except ValueError as exc:
            raise SpecError(f"{spec!r}: bad value for {key}: {exc}") from exc
    if base == "direct" and not use_llm:
        raise SpecError(f"{spec!r}: the direct system is the LLM alone; it cannot run without one")
    system = System(spec=spec, kind=base, overrides=overrides, use_llm=use_llm,  # type: ignore[arg-type]
                    gold_findings=gold_findings)
    if base in ("pipeline", "direct"):
        try:
            system.config()
        except ValidationError as exc:
            why = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise SpecError(f"{spec!r}: {why}") from exc
    return system


GROUPS = ("ablations", "caps", "sources")


def split_specs(text: str) -> list[str]:
    """A ``--systems`` value split into specs. Specs and a spec's modifiers are both comma-separated, so a piece
    that does not start a new spec (a system or group name) continues the previous one:
    ``"direct,pipeline:no-mee,cap=1024,bm25"`` -> ``["direct", "pipeline:no-mee,cap=1024", "bm25"]``."""
    out: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        head = piece.partition(":")[0].strip().lower()
        if out and head not in BASES and head not in GROUPS:
            out[-1] += "," + piece
        else:
            out.append(piece)
    return out


def expand(specs: list[str]) -> list[str]:
    """Specs with the group names expanded: ``ablations``, ``caps``, ``sources``."""
    groups = {"ablations": ABLATIONS, "caps": INPUT_CAPS, "sources": SOURCE_SUBSETS}
    out: list[str] = []
    for s in specs:
        out.extend(groups.get(s.strip().lower(), (s.strip(),)))
    return list(dict.fromkeys(x for x in out if x))
