"""Entity linking floor: lay and clinical phrases reach their KG concept through the index's name index
(what replaced one embedding per KG name and synonym). Gold set: tests/cases/entity_linking.yaml."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.linking_eval import gold_ids, load_cases  # noqa: E402


def test_entity_linking_floor(knowledge):
    kg, index = knowledge
    in_index = set().union(*index.open()._entities["G"].values())
    rows = []
    for case in load_cases():
        gold = gold_ids(kg, case["gold"]) & in_index
        if not gold:
            continue                      # the test index holds a subset of the KG
        hits = index.entity_search(case["phrase"], k=5, sources=["G"], with_knowledge=False)["G"]
        rows.append((case, gold, [h.concept_id for h in hits]))
    assert len(rows) >= 40, f"only {len(rows)} gold concepts in the test index"
    top1 = sum(r[0] in g for _, g, r in rows if r) / len(rows)
    top5 = sum(bool(set(r) & g) for _, g, r in rows) / len(rows)
    misses = [c["phrase"] for c, g, r in rows if not set(r) & g]
    # floors a few points under what the name index measured on this subset: top-1 0.87, top-5 0.91 (70 phrases)
    assert top5 >= 0.85 and top1 >= 0.8, (top1, top5, misses)
    # exact names (clinical wording) always link
    clinical = [(c, g, r) for c, g, r in rows
                if c["kind"] == "clinical" and c["phrase"].lower() in {n.lower() for n in c["gold"]}]
    assert clinical and all(r and r[0] in g for _, g, r in clinical), [c["phrase"] for c, g, r in clinical
                                                                       if not (r and r[0] in g)]
