"""Stage `search_triton`: greedy search in wall time on the Triton suite's tiers (the references the policy's
Triton results are compared with).

    python -m chronos.stages.search_triton --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --out reports/triton_search.json [--backend gpu|replay|auto]

Reads `search.triton.families` (one tier per family: triton = the 33 small kernels, triton_llm = the same
families at LLM sizes), `search.greedy` (max_steps, min_gain), `timing` and `measure`. Every greedy step is
one side-by-side comparison (chronos.search.timed); a kernel that fails (a miss on replay, say) is recorded
with its error and the run goes on.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from chronos.errors import ChronosError, one_line
from chronos.kernels.spec import load_module
from chronos.measure.verdicts import geomean
from chronos.progress import progress
from chronos.search.registry import run_strategy
from chronos.search.runs import kernels_of
from chronos.search.timed import TimedEvaluator
from chronos.stages.common import command_line, run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--out", type=Path, default=Path("reports/triton_search.json"))
    add_backend_arguments(ap)
    ap.add_argument("--only", help="regex on kernel names")


def tier_summary(rows: list[dict]) -> dict:
    """Greedy's final set per kernel against the baseline, side by side in its last comparison: `faster` and
    `slower` count that comparison's verdicts (a set every step accepted can still land within the noise
    of the baseline), the geomean takes every measured ratio as it is."""
    done = [r for r in rows if "best" in r]
    speed = [1.0 / r["best"]["ratio"] if r["best"].get("actions") else 1.0 for r in done]
    cands = [c for r in done for s in r["trace"] for c in s["candidates"]]
    return {"kernels": len(rows), "measured": len(done), "failed": len(rows) - len(done),
            "faster": sum(bool(r["best"]["actions"]) and r["best"]["verdict"] == "faster" for r in done),
            "slower": sum(bool(r["best"]["actions"]) and r["best"]["verdict"] == "slower" for r in done),
            "within_noise": sum(bool(r["best"]["actions"]) and r["best"]["verdict"] == "no_difference"
                                for r in done),
            "wrong": sum(c.get("verdict") == "invalid:wrong_output" for c in cands),
            "time_geomean": geomean(speed), "comparisons": sum(r["comparisons"] for r in done)}


def _body(args, cfg) -> int:
    gcfg, timing = cfg.search.greedy, cfg.timing
    tiers: dict[str, list[dict]] = {f: [] for f in cfg.search.triton.families}
    backend = open_backend(args, cfg)
    try:
        selected = list(kernels_of(args.kernels, cfg.search.triton.families, args.only))
        for family, specs_json, spec in progress(selected, desc="greedy in time", unit="kernel"):
            t0 = time.perf_counter()
            try:
                ev = TimedEvaluator(spec, load_module(specs_json, spec), backend, timing, gcfg.min_gain)
                row = run_strategy("greedy_time", ev, gcfg).to_json()
            except ChronosError as e:
                tiers[family].append({"kernel": spec.kernel, "error": one_line(e, 400)})
                print(f"search_triton: {spec.kernel}: FAILED: {tiers[family][-1]['error'][:200]}", flush=True)
                continue
            tiers[family].append(row)
            b = row["best"]
            print(f"search_triton: {spec.kernel:44s} {'+'.join(b['actions']) or '-':40s} "
                  f"ratio {b.get('ratio', 1.0):.4f} {b['verdict']} [{row['comparisons']} comparisons, "
                  f"{time.perf_counter() - t0:.1f} s]", flush=True)
        prov = {**backend.provenance(), "command": command_line("search_triton", args.argv)}
    finally:
        backend.close()
    out = {"provenance": prov,
           "params": {"families": list(cfg.search.triton.families), "max_steps": gcfg.max_steps,
                      "min_gain": gcfg.min_gain, "timing": timing.to_json()},
           "tiers": {f: {"summary": tier_summary(rows), "kernels": rows} for f, rows in tiers.items()}}
    write_json(args.out, out)
    print(f"search_triton: { {f: t['summary'] for f, t in out['tiers'].items()} }")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("search_triton", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
