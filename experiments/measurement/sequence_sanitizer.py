"""The evaluate stage's worker sequence under compute-sanitizer (GPU; #12 item 7, the sporadic fault).

    python experiments/measurement/sequence_sanitizer.py --out DIR [--tool memcheck] [--beam 8]

attention_d128_kv4096 faulted twice, each time in a worker that had measured other kernels first, and is
clean under the sanitizer alone. This runs the same sequence as stage `evaluate` — every Triton kernel in
order through chronos.optimize (baseline, the policy's greedy set and its beam), all in one worker — with the
worker itself under compute-sanitizer, so an invalid access by *any* kernel of the sequence (say, a write
past a buffer that corrupts what a later kernel reads) is reported, whether or not it faults. Fewer reps and
cycle samples than the pipeline's (the sanitizer is slow); the sanitizer's report goes to its own log file
(the worker's stdout is its protocol). Records go to a scratch store.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from chronos.config import load
from chronos.kernels.spec import load_module, load_specs
from chronos.measure.backend import GpuBackend
from chronos.optimize.cycles import optimize
from chronos.rl.checkpoint import load_model

SPECS = "data/kernels/triton/specs.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tool", default="memcheck")
    ap.add_argument("--beam", type=int, default=8)
    ap.add_argument("--only", help="substring: stop after this kernel")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cfg = load("params.yaml")
    mcfg = dataclasses.replace(cfg.measure, reps=5, cycle_samples=5, warmup=2, gpu_warmup_s=0.0,
                               watchdog_s=600.0, startup_timeout_s=600.0)
    argv = ("compute-sanitizer", "--tool", args.tool, "--print-limit", "50", "--log-file",
            str(args.out / f"{args.tool}_%p.log"), sys.executable, "-m", "chronos.measure.worker")
    policy = load_model("models/checkpoint_best.pt")
    with GpuBackend(args.out / "scratch.sqlite", mcfg, worker_argv=argv) as backend:
        for spec in load_specs(SPECS):
            res = optimize(spec, load_module(SPECS, spec), backend, policy, max_steps=cfg.predict.max_steps,
                           min_gain=cfg.search.greedy.min_gain, beam=args.beam)
            row = res.to_json()
            reasons = sorted({c.get("reason") or c.get("verdict") for c in row.get("beam", [])})
            print(f"{spec.kernel:44s} {row['verdict']:22s} {reasons}", flush=True)
            if args.only and args.only in spec.kernel:
                break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
