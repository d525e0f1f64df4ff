"""Measurement benchmarks on the GPU: throughput, repeatability, and the seed-style comparison.

    python benchmarks/bench_measure.py [--variants 300] [--repeat 12] [--store-dir /tmp/bench] \\
        [--json out.json]

throughput: unique gemm_tile variants (random legal action sequences) measured per second, compile included
(fresh store). repeatability: the same variants measured by two separate backends (separate worker
processes, separate stores); relative difference of medians. seed: baseline vs vec_ld+vec_st+maxnreg_128.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from chronos.config import MeasureConfig
from chronos.kernels.spec import load_module, load_specs, ptx_path
from chronos.kernels.variant import Variant
from chronos.measure.backend import GpuBackend
from chronos.ptx import emit
from chronos.transforms import apply, legal_actions

SPECS = Path("data/kernels/gemm_tile/specs.json")
SEED_SEQ = ("vec_ld", "vec_st", "maxnreg_128")


def random_variants(n: int, seed: int = 0) -> list[tuple]:
    rng = random.Random(seed)
    specs = load_specs(SPECS)
    mods = {s.kernel: load_module(SPECS, s) for s in specs}
    seen, out = set(), []
    tries = 0
    while len(out) < n and tries < 50 * n:
        tries += 1
        s = rng.choice(specs)
        m, acts = mods[s.kernel], []
        for _ in range(rng.randint(1, 4)):
            legal = legal_actions(m, acts)
            if not legal:
                break
            a = rng.choice(legal)
            m = apply(m, a)
            acts.append(a)
        ptx = emit(m)
        if (s.kernel, ptx) in seen:
            continue
        seen.add((s.kernel, ptx))
        out.append((s, Variant(s, ptx, tuple(acts))))
    return out


def measure_all(be: GpuBackend, pairs) -> list:
    by_kernel: dict[str, list] = {}
    for s, v in pairs:
        by_kernel.setdefault(s.kernel, (s, []))[1].append(v)
    groups = [(s, vs, ptx_path(SPECS, s).read_text()) for s, vs in by_kernel.values()]
    return [r for rs in be.measure_many(groups) for r in rs]


def rel(a, b) -> float:
    return abs(a - b) / max(abs(a), 1e-12)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=12)
    ap.add_argument("--store-dir", type=Path, default=Path("/tmp/bench_measure"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    args.store_dir.mkdir(parents=True, exist_ok=True)
    cfg = MeasureConfig()
    out: dict = {"config": cfg.measured(), "config_hash": cfg.config_hash()}

    pairs = random_variants(args.variants)
    with GpuBackend(args.store_dir / f"throughput-{time.time_ns()}.sqlite", cfg) as be:
        out["provenance"] = be.provenance()
        t0 = time.perf_counter()
        recs = measure_all(be, pairs)
        dt = time.perf_counter() - t0
    measured = sum(1 for r in recs if "not measured again" not in r.log)
    out["throughput"] = {"variants": len(recs), "measured": measured, "dedup": len(recs) - measured,
                         "valid": sum(r.valid for r in recs), "seconds": dt, "variants_per_s": len(recs) / dt,
                         "measured_per_s": measured / dt,
                         "reasons": sorted({r.reason for r in recs if not r.valid})}
    print(f"throughput: {len(recs)} unique variants ({measured} measured, {len(recs) - measured} same-SASS) "
          f"in {dt:.1f} s = {len(recs) / dt:.1f}/s ({measured / dt:.1f} measured/s); "
          f"valid {out['throughput']['valid']}")

    rep = [p for p in pairs if True][: args.repeat]
    runs = []
    for k in range(2):
        with GpuBackend(args.store_dir / f"repeat{k}-{time.time_ns()}.sqlite", cfg) as be:
            runs.append(measure_all(be, rep))
    rows = [(a.kernel, "+".join(a.actions), rel(a.cycles_median, b.cycles_median),
             rel(a.time_ms_median, b.time_ms_median))
            for a, b in zip(runs[0], runs[1], strict=True)
            if a.valid and b.valid and a.cycles_median and b.cycles_median]
    cyc = [r[2] for r in rows]
    tim = [r[3] for r in rows]
    out["repeatability"] = {"n": len(rows), "cycles_max_rel": max(cyc, default=None),
                            "time_max_rel": max(tim, default=None),
                            "cycles_within_0.5pct": sum(c <= 0.005 for c in cyc),
                            "time_within_1pct": sum(t <= 0.01 for t in tim),
                            "rows": rows}
    print(f"repeatability over {len(rows)} variants: cycles max rel diff {max(cyc, default=0):.4%} "
          f"({sum(c <= 0.005 for c in cyc)}/{len(rows)} within 0.5%), "
          f"time max rel diff {max(tim, default=0):.4%} "
          f"({sum(t <= 0.01 for t in tim)}/{len(rows)} within 1%)")

    seed_rows = []
    specs = {s.kernel: s for s in load_specs(SPECS)}
    with GpuBackend(args.store_dir / f"seed-{time.time_ns()}.sqlite", cfg) as be:
        for name in ("gemm_tile(4,6,8)", "gemm_tile(2,2,2)", "gemm_tile(4,4,4)", "gemm_tile(6,6,6)",
                     "gemm_tile(8,8,8)"):
            s = specs[name]
            base = ptx_path(SPECS, s).read_text()
            m = load_module(SPECS, s)
            for a in SEED_SEQ:
                m = apply(m, a)
            b, v = be.measure(s, [Variant(s, base, ()), Variant(s, emit(m), SEED_SEQ)])
            row = {"kernel": name, "valid": [b.valid, v.valid], "reason": v.reason,
                   "base_cycles": b.cycles_median, "var_cycles": v.cycles_median,
                   "base_time_ms": b.time_ms_median, "var_time_ms": v.time_ms_median,
                   "base_regs": b.registers, "var_regs": v.registers}
            if b.valid and v.valid:
                row["cycles_change"] = v.cycles_median / b.cycles_median - 1
                row["time_change"] = v.time_ms_median / b.time_ms_median - 1
            seed_rows.append(row)
            print(f"seed {name}: valid {b.valid}/{v.valid} cycles {b.cycles_median} -> {v.cycles_median} "
                  f"({row.get('cycles_change', float('nan')):+.1%}); time_ms {b.time_ms_median:.5f} -> "
                  f"{v.time_ms_median if v.time_ms_median is not None else float('nan'):.5f} "
                  f"({row.get('time_change', float('nan')):+.1%}); regs {b.registers} -> {v.registers}")
    out["seed"] = seed_rows
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
