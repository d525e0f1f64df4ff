"""Cross-run agreement of the time verdicts (#12, item 4): ten kernels' best variant against their baseline,
measured afresh, to be run in two separate device calls and compared. (GPU for measuring; CPU for --compare.)

    python experiments/measurement/cross_run.py --search reports/triton_search.json --json run_a.json   #
    call 1 python experiments/measurement/cross_run.py --search reports/triton_search.json --json run_b.json 
     # call 2 python experiments/measurement/cross_run.py --compare run_a.json run_b.json

Each call measures into a fresh scratch store (nothing is answered from an earlier run) through the decision
path (backend.compare, chronos.measure.verdicts). The ten kernels: greedy's faster ones by gain, then the
others by their best candidate's ratio, across the tiers in the search report. Agreement: per kernel the
ratio of run b minus the ratio of run a; the gate is |difference| <= 1% for all ten.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path

from chronos.config import load
from chronos.kernels.spec import load_module
from chronos.measure.backend import GpuBackend
from chronos.search.runs import kernels_of
from chronos.search.timed import TimedEvaluator


def pick(search: dict, n: int) -> list[tuple[str, str, tuple[str, ...]]]:
    """(family, kernel, best set) for n kernels, the clearly faster ones first."""
    rows = [(f, r) for f, t in search["tiers"].items() for r in t["kernels"] if "best" in r]
    faster = sorted((r["best"]["ratio"], f, r["kernel"], tuple(r["best"]["actions"]))
                    for f, r in rows if r["best"]["actions"])
    rest = []
    for f, r in rows:
        if r["best"]["actions"]:
            continue
        cands = [c for c in r["trace"][0]["candidates"] if c.get("ratio")]
        if cands:
            c = min(cands, key=lambda c: c["ratio"])
            rest.append((c["ratio"], f, r["kernel"], tuple(c["actions"])))
    return [(f, k, s) for _, f, k, s in (faster + sorted(rest))[:n]]


def measure(search_path: Path, kernels: Path, n: int, rounds: int | None = None,
            max_rounds: int | None = None) -> dict:
    cfg = load(Path("params.yaml"))
    if rounds:  # an ablation: the same protocol with more rounds (narrower intervals)
        cfg = dataclasses.replace(cfg, timing=dataclasses.replace(cfg.timing, rounds=rounds))
    if max_rounds:  # the adaptive protocol: more rounds only where an interval is still wide
        cfg = dataclasses.replace(cfg, timing=dataclasses.replace(cfg.timing, max_rounds=max_rounds))
    chosen = pick(json.loads(search_path.read_text()), n)
    out = {}
    with tempfile.TemporaryDirectory() as tmp, GpuBackend(Path(tmp) / "scratch.sqlite", cfg.measure) as b:
        for family, kernel, best in chosen:
            for _, sj, spec in kernels_of(kernels, [family], f"^{kernel}$"):
                ev = TimedEvaluator(spec, load_module(sj, spec), b, cfg.timing, cfg.search.greedy.min_gain)
                cmp, idx = ev.compare([best])
                est = cmp.estimate(idx[0], cfg.timing)
                out[kernel] = {"family": family, "set": list(best), "ratio": est.ratio,
                               "rounds": est.rounds,
                               "ci": [est.low, est.high],
                               "verdict": cmp.verdict(idx[0], cfg.timing, cfg.search.greedy.min_gain),
                               "primary": cmp.primary, "baseline_ms": cmp.time_ms(0)[0],
                               "measured_at": cmp.provenance.get("created_at")}
                print(kernel, json.dumps(out[kernel]), flush=True)
        out["_provenance"] = {**b.provenance(), "timing": cfg.timing.to_json()}
    return out


def compare(a: dict, b: dict) -> dict:
    rows = {k: {"a": a[k]["ratio"], "b": b[k]["ratio"], "diff": b[k]["ratio"] - a[k]["ratio"]}
            for k in a if not k.startswith("_") and k in b}
    worst = max((abs(r["diff"]) for r in rows.values()), default=None)
    within = sum(abs(r["diff"]) <= 0.01 for r in rows.values())
    return {"kernels": rows, "max_abs_diff": worst, "within_1pct": within}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--search", type=Path, default=Path("reports/triton_search.json"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path)
    ap.add_argument("--rounds", type=int, help="timing.rounds for this run (default: params.yaml)")
    ap.add_argument("--max-rounds", type=int, help="timing.max_rounds (adaptive) for this run")
    a = ap.parse_args()
    if a.compare:
        res = compare(*(json.loads(p.read_text()) for p in a.compare))
        for k, r in res["kernels"].items():
            print(f"{k:44s} {r['a']:.4f} {r['b']:.4f} {100 * r['diff']:+.2f}%")
        print(f"max |diff| {100 * res['max_abs_diff']:.2f}%, "
              f"{res['within_1pct']} of {len(res['kernels'])} within 1%")
    else:
        res = measure(a.search, a.kernels, a.n, a.rounds, a.max_rounds)
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
