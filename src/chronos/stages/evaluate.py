"""Stage `evaluate`: the trained policy, zero-shot, on the 33 Triton kernels, through the optimize path
(chronos.optimize).

    python -m chronos.stages.evaluate --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --checkpoint models/checkpoint_best.pt \
        --out reports/measure_triton_results.json [--backend gpu|replay|auto]

Per kernel: the policy's greedy rollout (masked, at most `predict.max_steps` transforms) gives a sequence;
the baseline and the variant are measured (bit-exact verification included). The optimize path returns the
variant only if it is valid, clearly faster in cycles (`search.greedy.min_gain`, IQR bands apart) and not
clearly slower in event-timed wall time (verdict `slower_in_time` otherwise), else the baseline, so it never
returns a slower or unverified kernel. On replay, a kernel whose prediction was
never measured is reported as `unmeasured` (run this stage on a GPU to measure it) and the run goes on.

With `predict.beam: k` (k > 1) the optimize path also measures the policy's k most probable distinct sets
(chronos.rl.decode.beam_decode) and returns the fastest clearly faster verified one: the greedy answer is one
candidate
among them. Both are reported (`optimize`, `optimize_beam`; summary `beam`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from chronos.kernels.spec import load_module
from chronos.optimize import optimize, summarize
from chronos.rl.checkpoint import load_model
from chronos.search.runs import kernels_of
from chronos.stages.common import run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--checkpoint", type=Path, default=Path("models/checkpoint_best.pt"))
    ap.add_argument("--out", type=Path, default=Path("reports/measure_triton_results.json"))
    add_backend_arguments(ap)


def _body(args, cfg) -> int:
    torch.set_num_threads(1)
    policy = load_model(args.checkpoint).eval()
    rows = []
    backend = open_backend(args, cfg)
    try:
        for _, specs_json, spec in kernels_of(args.kernels, cfg.search.triton.families):
            res = optimize(spec, load_module(specs_json, spec), backend, policy,
                           max_steps=cfg.predict.max_steps,
                           min_gain=cfg.search.greedy.min_gain, beam=cfg.predict.beam)
            row = res.to_json()
            rows.append(row)
            ch = row.get("change")
            print(f"evaluate: {spec.kernel:44s} {'+'.join(row['sequence']) or '(stop)':50s} "
                  f"{'' if ch is None else f'{100 * ch:+.1f}% '}{row['verdict']}", flush=True)
        prov = backend.provenance()
    finally:
        backend.close()
    summary = summarize(rows)
    write_json(args.out, {"provenance": {**prov, "checkpoint": str(args.checkpoint)}, "summary": summary,
                          "kernels": rows})
    print(f"evaluate: {summary}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("evaluate", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
