"""Stage `bc`: behaviour cloning of the greedy demonstrations, the DA-GRPO warm start.

    python -m chronos.stages.bc --params params.yaml --demos data/demos/trajectories.jsonl \
        --out models/bc.pt --stats reports/bc_stats.json

Reads the `bc:` block and `split.heldout_kernels` (BC and GRPO hold out the same kernels). Writes the
checkpoint of the best epoch and {"args", "best_epoch",
"best_train_acc", "best_heldout_acc", "history": [{"epoch", "loss", "train_acc", "heldout_acc"}],
"confusion_train", "confusion_heldout", "train_kernels", "heldout_kernels", ...}.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import torch

from chronos.errors import ChronosError
from chronos.rl.bc import train_bc
from chronos.rl.checkpoint import save_checkpoint
from chronos.rl.recorded import RecordedTraining, add_recorded_arguments, file_sha256, training_key
from chronos.stages.common import run_stage, write_json


def args_record(cfg, heldout: list[str] | None) -> dict:
    """The settings as bc_stats.json has always recorded them (the split beside heldout_fraction)."""
    d = dataclasses.asdict(cfg)
    keys = ["epochs", "lr", "batch_size", "weight_decay", "seed", "heldout_fraction"]
    return {**{k: d[k] for k in keys}, "heldout_kernels": heldout,
            "hidden": d["hidden"], "dropout": d["dropout"]}


def read_demos(path: Path) -> list[dict]:
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise ChronosError(f"cannot read demonstrations {path}: {e}") from e
    demos = []
    for i, line in enumerate(lines, 1):
        if line.strip():
            try:
                demos.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ChronosError(f"{path}:{i}: not a JSON line: {e}") from e
    if not demos:
        raise ChronosError(f"{path}: no demonstrations")
    return demos


def _arguments(ap) -> None:
    ap.add_argument("--demos", type=Path, default=Path("data/demos/trajectories.jsonl"))
    ap.add_argument("--out", type=Path, default=Path("models/bc.pt"))
    ap.add_argument("--stats", type=Path, default=Path("reports/bc_stats.json"))
    add_recorded_arguments(ap, "bc")


def training_io(args, cfg) -> tuple[dict, dict]:
    """What the training reads (the key of its record, chronos.rl.recorded) and the files it writes."""
    inputs = {"bc": dataclasses.asdict(cfg.bc), "heldout_kernels": list(cfg.split.heldout_kernels) or None,
              "actions": cfg.actions, "demos": file_sha256(args.demos)}
    return inputs, {"bc.pt": args.out, "bc_stats.json": args.stats}


def _body(args, cfg) -> int:
    # One thread: threaded float reductions change the order of sums, and with it the last bits of the
    # weights; the stage's outputs must be byte-identical on every rerun (DVC and Snakemake compare them).
    torch.set_num_threads(1)
    heldout = list(cfg.split.heldout_kernels) or None
    demos = read_demos(args.demos)
    inputs, outputs = training_io(args, cfg)
    key, recorded = training_key(inputs), RecordedTraining(args.recorded, "bc")
    if not args.retrain and (meta := recorded.replay(key, outputs)):
        print(f"bc: {recorded.describe(meta)} -> {args.out}")
        return 0
    policy, stats = train_bc(demos, cfg.bc, heldout, log=lambda s: print(s, file=sys.stderr),
                             action_space=cfg.actions)
    record = args_record(cfg.bc, heldout)
    meta = {"stage": "bc", "untrained": False, "args": record, "best_epoch": stats["best_epoch"],
            "best_train_acc": stats["best_train_acc"], "best_heldout_acc": stats["best_heldout_acc"],
            "heldout_kernels": stats["heldout_kernels"], "demos": str(args.demos),
            "torch": str(torch.__version__)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(args.out, policy, meta)
    write_json(args.stats, {"args": record, **stats})
    if args.write_record:
        recorded.save(key, inputs, outputs)
    held = stats["best_heldout_acc"]
    print(f"bc: {len(demos)} demonstrations, best epoch {stats['best_epoch']}: train acc "
          f"{stats['best_train_acc']:.3f}, held-out acc {'-' if held is None else f'{held:.3f}'} "
          f"-> {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("bc", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
