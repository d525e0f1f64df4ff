"""Repeatability over many variants: measure again, in a separate run (fresh workers, fresh scratch store),
the atlas variants of some kernels that an earlier run already measured, and compare the two runs per variant.

    python experiments/measurement/atlas_repeat.py --atlas data/store/atlas.sqlite --kernel
        'gemm_tile\\(2,2,' \\ [--params params.yaml] [--json out.json]

Works on a scratch copy of the plan file (the original is only read). Prints, for cycles and time, the
median, 95th percentile and maximum relative difference between the runs, and the share of variants within
0.5% (cycles) and 1% (time); also whether both runs pick the same best variant per kernel.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from chronos.config import load as load_config
from chronos.measure.backend import GpuBackend
from chronos.search.atlas_measure import measure_missing
from chronos.search.atlas_plan import AtlasDB
from chronos.search.runs import kernels_of
from chronos.search.space import realize_recipe


def rel_diffs(a: dict, b: dict, key: str) -> np.ndarray:
    both = [v for v in a if v in b and a[v]["valid"] and b[v]["valid"] and a[v][key] and b[v][key]]
    return np.array([abs(b[v][key] - a[v][key]) / a[v][key] for v in both])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--atlas", type=Path, default=Path("data/store/atlas.sqlite"))
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--kernel", required=True, help="regex on kernel names (kernels already measured)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    cfg = load_config(args.params).measure
    first = AtlasDB(args.atlas)
    selected = [t for t in kernels_of(args.kernels, ["gemm_tile"], args.kernel) if first.has(t[2].kernel)]
    before = {s.kernel: first.measured(s.kernel) for _, _, s in selected}
    tmp = Path(tempfile.mkdtemp()) / "atlas.sqlite"
    shutil.copy(args.atlas, tmp)
    with sqlite3.connect(tmp) as db:  # the scratch copy starts with nothing measured for these kernels
        ids = [first.kernel_id(s.kernel) for _, _, s in selected]
        db.executemany("DELETE FROM measured WHERE kernel_id = ?", [(i,) for i in ids])
    second = AtlasDB(tmp)
    t0 = time.perf_counter()
    with GpuBackend(tmp.parent / "scratch.sqlite", cfg, realize=realize_recipe) as backend:
        measure_missing(second, selected, backend)
        prov = backend.provenance()
    wall = time.perf_counter() - t0
    out = {"provenance": prov,
           "first_run": {k: v for k, v in first.meta().items() if k.startswith("measured_")},
           "kernels": [s.kernel for _, _, s in selected], "wall_s": wall}
    after = {s.kernel: second.measured(s.kernel) for _, _, s in selected}
    for key, tol in (("cycles_median", 0.005), ("time_ms_median", 0.01)):
        d = np.concatenate([rel_diffs(before[k], after[k], key) for k in before])
        out[key] = {"variants": int(d.size), "median": float(np.median(d)),
                    "p95": float(np.percentile(d, 95)), "max": float(d.max()),
                    "within": float((d <= tol).mean()), "tolerance": tol}
    same_best = 0
    for k in before:
        best = [min((m["cycles_median"], v) for v, m in run[k].items() if m["valid"])[1]
                for run in (before, after)]
        same_best += best[0] == best[1]
    out["same_best_variant"] = {"kernels": len(before), "same": same_best}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
