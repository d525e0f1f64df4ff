"""Device smoke test of the side-by-side path (GPU): A/A on a few kernels, greedy in time on one, timings.

    python scripts/gpu_compare_smoke.py --store /tmp/smoke.sqlite [--kernels data/kernels]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from chronos.config import Config, MeasureConfig, TimingConfig
from chronos.kernels.spec import load_module
from chronos.measure.aa import aa_kernel
from chronos.measure.backend import GpuBackend
from chronos.search.runs import kernels_of
from chronos.search.timed import TimedEvaluator, greedy_in_time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--aa", default="silu_mul_f16_n4096|rowmax_f32_r64_c8192|matmul_f16_m1024")
    ap.add_argument("--greedy", default="gelu_erf_f32_n4099_nodiv|layernorm_f16_r64_c4096")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    timing, mcfg, out = TimingConfig(), MeasureConfig(), {}
    with GpuBackend(a.store, mcfg) as b:
        print("provenance", b.provenance(), flush=True)
        for _, sj, spec in kernels_of(a.kernels, ["triton"], a.aa):
            t0 = time.perf_counter()
            row = aa_kernel(spec, sj, b, timing, 0.005, 8)
            row["seconds"] = time.perf_counter() - t0
            out[f"aa:{spec.kernel}"] = row
            print(json.dumps(row)[:600], flush=True)
        for _, sj, spec in kernels_of(a.kernels, ["triton"], a.greedy):
            t0 = time.perf_counter()
            ev = TimedEvaluator(spec, load_module(sj, spec), b, timing, 0.005)
            res = greedy_in_time(ev, Config().search.greedy).to_json()
            res["seconds"] = time.perf_counter() - t0
            out[f"greedy:{spec.kernel}"] = res
            print(spec.kernel, res["best"], res["comparisons"], f"{res['seconds']:.1f} s", flush=True)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
