"""Stage `confirm`: the contenders of every gemm_tile kernel re-measured side by side, so that the oracle,
greedy, the best fixed set and the policy are compared on numbers taken together rather than hours apart.

    (GPU) python -m chronos.stages.confirm --measure --params params.yaml \
              --out-data data/confirm/gemm_tile.json
    (any) python -m chronos.stages.confirm --params params.yaml --data data/confirm/gemm_tile.json \
              --out reports/confirm.json

Why: the atlas's oracle is the minimum over thousands of per-variant medians, each measured once, so it is
biased low (the winner's curse), and measurements of one variant taken in separate runs differ by ~1% at the
median and several % in the tail (issue #4; experiments/measurement/repeat_protocol.py). Per kernel,
`--measure` takes the baseline, the atlas's `confirm.top` best SASS variants, the best fixed set, greedy's
and the policy's final sets, deduplicated by SASS variant, and measures them together with
`GpuRunner.measure_rounds` (bit-exact verification, then `confirm.rounds` interleaved rounds on one set of
buffers). Without `--measure` it summarises the committed data: per split, the mean cycle change of each
contender, the confirmed oracle (the best confirmed candidate) and the policy's share of its mean log-gain.
The policy's set counts as confirmed when a measured candidate has its SASS (the atlas's variant of that
set: a `.maxnreg 255` ptxas never needed changes nothing), else it is `unconfirmed` (a policy retrained
since the measurement).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from chronos.search.atlas_plan import AtlasDB, mask_of
from chronos.search.confirm import measure_contenders, summarize
from chronos.search.runs import kernels_of
from chronos.stages.common import command_line, read_json, run_stage, write_json


def _arguments(ap) -> None:
    ap.add_argument("--measure", action="store_true", help="measure on the GPU and write --out-data")
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--only", help="regex on kernel names (with --measure)")
    ap.add_argument("--realloc", action=argparse.BooleanOptionalAction, default=None,
                    help="fresh buffers every round (overrides confirm.realloc)")
    ap.add_argument("--atlas", type=Path, default=Path("data/store/atlas.sqlite"))
    ap.add_argument("--oracle", type=Path, default=Path("reports/oracle.json"))
    ap.add_argument("--greedy", type=Path, default=Path("reports/greedy_results.json"))
    ap.add_argument("--training", type=Path, default=Path("reports/training_result.json"))
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/chronos_confirm_store.sqlite"))
    ap.add_argument("--out-data", type=Path, default=Path("data/confirm/gemm_tile.json"))
    ap.add_argument("--data", type=Path, default=Path("data/confirm/gemm_tile.json"))
    ap.add_argument("--out", type=Path, default=Path("reports/confirm.json"))


def _policy_sets(args) -> dict:
    return {k["kernel"]: k["final_set"] for k in read_json(args.training, "training result")["kernels"]}


def _measure(args, cfg) -> int:
    ccfg = cfg.confirm if args.realloc is None else dataclasses.replace(cfg.confirm, realloc=args.realloc)
    contenders = {
        "fixed": tuple(read_json(args.oracle, "oracle")["summary"]["best_fixed_set"]["actions"]),
        "greedy": {k["kernel"]: k["best"]["actions"]
                   for k in read_json(args.greedy, "greedy results")["kernels"]
                   if "best" in k},
        "policy": _policy_sets(args)}
    db = AtlasDB(args.atlas)
    try:
        data = measure_contenders(list(kernels_of(args.kernels, ["gemm_tile"], args.only)), db, contenders,
                                  cfg.measure, ccfg, args.scratch, command_line("confirm", args.argv))
    finally:
        db.close()
    write_json(args.out_data, data)
    print(f"confirm: {len(data['kernels'])} kernels measured in {data['provenance']['seconds']} s "
          f"-> {args.out_data}")
    return 0


def _body(args, cfg) -> int:
    if args.measure:
        return _measure(args, cfg)
    policy = _policy_sets(args)
    db = AtlasDB(args.atlas)
    masks = {}

    def variant_of(kernel: str, actions) -> int | None:  # the atlas's SASS variant of a set
        if kernel not in masks:
            masks[kernel] = db.set_variants(kernel) if db.has(kernel) else {}
        return masks[kernel].get(mask_of(actions))

    try:
        out = summarize(read_json(args.data, "confirm data"), set(cfg.split.heldout_kernels), policy,
                        cfg.search.greedy.min_gain, variant_of)
    finally:
        db.close()
    write_json(args.out, out)
    print(f"confirm: {json.dumps(out['summary'])}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("confirm", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
