"""The optimize path in wall time (chronos.optimize.timed) on the first N Triton kernels, on the GPU
(a device check).

    python scripts/gpu_check_optimize.py --store /tmp/scratch.sqlite --n 2 --beam 4
"""

from __future__ import annotations

import argparse

from chronos.config import load
from chronos.kernels.spec import load_module, load_specs
from chronos.optimize.timed import optimize_time
from chronos.rl.checkpoint import load_model
from chronos.search.atlas_replay import backend_with_atlas

SPECS = "data/kernels/triton/specs.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="/tmp/scratch.sqlite")
    ap.add_argument("--n", type=int, default=2)
    ap.add_argument("--beam", type=int, default=4)
    args = ap.parse_args()
    cfg = load("params.yaml")
    policy = load_model("models/checkpoint_best.pt")
    with backend_with_atlas("gpu", args.store, cfg.measure) as backend:
        for spec in load_specs(SPECS)[:args.n]:
            res = optimize_time(spec, load_module(SPECS, spec), backend, policy,
                                max_steps=cfg.predict.max_steps, min_gain=cfg.search.greedy.min_gain,
                                beam=args.beam, timing=cfg.timing)
            row = res.to_json()
            print(spec.kernel, row["verdict"], row.get("returned"), row.get("speedup_time"),
                  row.get("speedup_ci"), flush=True)


if __name__ == "__main__":  # the compile pool spawns processes that re-import this module
    main()
