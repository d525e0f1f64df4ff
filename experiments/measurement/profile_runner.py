"""Where does a measurement's time go? cProfile of GpuRunner.measure on gemm_tile variants (GPU only).

    python experiments/measurement/profile_runner.py [--n 20]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

from chronos.config import MeasureConfig
from chronos.kernels.spec import load_module, load_specs
from chronos.measure.instrument import instrument_text
from chronos.measure.runner import GpuRunner
from chronos.ptx import emit
from chronos.toolchain import assemble
from chronos.transforms import apply_sequence

SPECS = Path("data/kernels/gemm_tile/specs.json")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20)
    n = ap.parse_args().n
    spec = next(s for s in load_specs(SPECS) if s.kernel == "gemm_tile(8,8,8)")
    root = load_module(SPECS, spec)
    cfg = MeasureConfig()
    base = assemble(emit(root), cfg.arch).cubin
    variants = []
    for acts in (["vec_ld"], ["vec_st"], ["vec_ld", "vec_st"], ["cache_cs"], ["reorder_cp"]):
        ptx = emit(apply_sequence(root, acts))
        variants.append((assemble(ptx, cfg.arch).cubin,
                         assemble(instrument_text(ptx, spec.entry), cfg.arch).cubin))
    r = GpuRunner(0)
    r.measure(spec, cfg, ("base", base), ("v0", variants[0][0]), ("c0", variants[0][1]))  # warm
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    for i in range(n):
        v, c = variants[i % len(variants)]
        r.measure(spec, cfg, ("base", base), (f"v{i}", v), (f"c{i}", c))
    prof.disable()
    dt = time.perf_counter() - t0
    print(f"{n} measurements of gemm_tile(8,8,8) variants: {dt / n * 1e3:.1f} ms each")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    r.close()


if __name__ == "__main__":
    main()
