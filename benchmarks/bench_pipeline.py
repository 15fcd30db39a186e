"""Pipeline benchmark: offline (no-LLM) case latency after warm-up, and — with an LLM endpoint — LLM calls per
case and prompt tokens per call against the input cap. Results are appended to docs/performance.md.

    python -m benchmarks.bench_pipeline [--repeats 3] [--llm-base-url URL --llm-model NAME] [--no-write]

Uses the built index in $CLINICALRAG_HOME (``make index``). Cases: tests/cases/clinical_cases.yaml.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    i = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[i]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--llm-base-url")
    ap.add_argument("--llm-model")
    ap.add_argument("--llm-cases", type=int, default=5, help="cases to run through the LLM path")
    ap.add_argument("--max-input-tokens", type=int, default=4096)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)

    from agents.llm import LLMConfig
    from graph.config import PipelineConfig
    from graph.pipeline import ClinicalRAG, Resources

    cases = [c for c in yaml.safe_load((ROOT / "tests/cases/clinical_cases.yaml").read_text())["cases"]]
    t0 = time.perf_counter()
    rt = Resources(llm_config=LLMConfig())
    rt.warm()
    rag = ClinicalRAG(rt)
    warm_s = time.perf_counter() - t0
    rag.ask(cases[0]["presentation"], audit=False)  # warm-up run
    lat = []
    for _ in range(args.repeats):
        for c in cases:
            t = time.perf_counter()
            rag.ask(c["presentation"], audit=False)
            lat.append((time.perf_counter() - t) * 1000)
    res = {"cases": len(cases), "runs": len(lat), "startup_s": round(warm_s, 2),
           "p50_ms": round(statistics.median(lat), 1), "p95_ms": round(_pct(lat, 95), 1),
           "max_ms": round(max(lat), 1)}
    print(json.dumps({"offline": res}, indent=2))
    llm_res = None
    if args.llm_base_url and args.llm_model:
        cfg = LLMConfig(base_url=args.llm_base_url, model=args.llm_model, timeout=300)
        rag_llm = ClinicalRAG(Resources(llm_config=cfg, kg=rt.kg, index=rt.index))
        calls, tokens, cap_ok, latencies, escal = [], [], True, [], 0
        for c in cases[: args.llm_cases]:
            t = time.perf_counter()
            r = rag_llm.ask(c["presentation"], PipelineConfig(max_input_tokens=args.max_input_tokens), audit=False)
            latencies.append(time.perf_counter() - t)
            calls.append(r["llm"]["calls"])
            escal += r["escalation"]["escalated"]
            for ev in r["trace"]:
                for call in ev.get("llm_calls", []):
                    tokens.append(call["prompt_tokens"])
                    cap_ok &= call["prompt_tokens"] <= args.max_input_tokens
        llm_res = {"model": args.llm_model, "cases": len(calls), "calls_per_case_max": max(calls),
                   "calls_per_case_mean": round(statistics.mean(calls), 2),
                   "prompt_tokens_per_call_max": max(tokens) if tokens else 0,
                   "prompt_tokens_per_call_mean": round(statistics.mean(tokens), 1) if tokens else 0,
                   "within_cap": cap_ok, "cap": args.max_input_tokens, "escalated": escal,
                   "case_latency_s_mean": round(statistics.mean(latencies), 1)}
        print(json.dumps({"llm": llm_res}, indent=2))
    if not args.no_write:
        _write(res, llm_res)
    return 0


def _write(res: dict, llm_res: dict | None) -> None:
    doc = ROOT / "docs" / "performance.md"
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"\n### Pipeline run ({stamp}, {platform.machine()}, {__import__('os').cpu_count()} cores)\n",
             "| measure | target | measured |", "|---|---|---|",
             f"| offline case latency p50 (after warm-up, {res['runs']} runs over {res['cases']} cases) | ≤ 150 ms | {res['p50_ms']} ms |",
             f"| offline case latency p95 | ≤ 400 ms | {res['p95_ms']} ms |",
             f"| start-up (KG + index + extractor load) | — | {res['startup_s']} s |"]
    if llm_res:
        lines += [f"| LLM calls per case ({llm_res['model']}, {llm_res['cases']} cases) | ≤ 4 | max {llm_res['calls_per_case_max']}, mean {llm_res['calls_per_case_mean']} |",
                  f"| prompt tokens per call (cap {llm_res['cap']}) | within cap | max {llm_res['prompt_tokens_per_call_max']}, mean {llm_res['prompt_tokens_per_call_mean']} ({'within' if llm_res['within_cap'] else 'OVER'}) |",
                  f"| LLM case latency (mean) | — | {llm_res['case_latency_s_mean']} s |"]
    text = doc.read_text() if doc.exists() else "# Performance\n"
    marker = "\n## Agent pipeline\n"
    if marker not in text:
        text += marker + "\nMeasured by `python -m benchmarks.bench_pipeline` (newest last).\n"
    doc.write_text(text + "\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
