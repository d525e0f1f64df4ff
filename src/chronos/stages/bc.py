"""Stage `bc`: behaviour cloning of the greedy demonstrations, the DA-GRPO warm start.

    python -m chronos.stages.bc --params params.yaml --demos data/demos/trajectories.jsonl \
        --out models/bc.pt --stats reports/bc_stats.json

Reads the `bc:` block (BCArgs' fields; `heldout_kernels` falls back to `split.heldout_kernels`, so BC and
GRPO hold out the same kernels). Writes the checkpoint of the best epoch and {"args", "best_epoch",
"best_train_acc", "best_heldout_acc", "history": [{"epoch", "loss", "train_acc", "heldout_acc"}],
"confusion_train", "confusion_heldout", "train_kernels", "heldout_kernels", ...}.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch
import yaml

from chronos.errors import ChronosError
from chronos.rl.bc import BCArgs, train_bc


def load_args(params_path: Path) -> BCArgs:
    params = yaml.safe_load(params_path.read_text()) or {}
    block = dict(params.get("bc") or {})
    if "heldout_kernels" not in block and (params.get("split") or {}).get("heldout_kernels") is not None:
        block["heldout_kernels"] = list(params["split"]["heldout_kernels"])
    names = {f.name for f in dataclasses.fields(BCArgs)} - {"log"}
    unknown = sorted(set(block) - names)
    if unknown:
        raise ChronosError(f"{params_path}: unknown bc params {unknown}; known: {sorted(names)}")
    return BCArgs(**block)


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--demos", type=Path, default=Path("data/demos/trajectories.jsonl"))
    ap.add_argument("--out", type=Path, default=Path("models/bc.pt"))
    ap.add_argument("--stats", type=Path, default=Path("reports/bc_stats.json"))
    args = ap.parse_args(argv)
    # One thread: threaded float reductions change the order of sums, and with it the last bits of the
    # weights; the stage's outputs must be byte-identical on every rerun (DVC and Snakemake compare them).
    torch.set_num_threads(1)
    try:
        from chronos.inference import save_checkpoint

        bc_args = load_args(args.params)
        demos = read_demos(args.demos)
        bc_args.log = lambda s: print(s, file=sys.stderr)
        policy, stats = train_bc(demos, bc_args)
        plain_args = {k: v for k, v in dataclasses.asdict(bc_args).items() if k != "log"}
        meta = {"stage": "bc", "untrained": False, "args": plain_args, "best_epoch": stats["best_epoch"],
                "best_train_acc": stats["best_train_acc"], "best_heldout_acc": stats["best_heldout_acc"],
                "heldout_kernels": stats["heldout_kernels"], "demos": str(args.demos),
                "torch": str(torch.__version__)}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        save_checkpoint(args.out, policy, meta)
    except (ChronosError, ValueError) as e:
        print(f"bc: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    args.stats.parent.mkdir(parents=True, exist_ok=True)
    args.stats.write_text(json.dumps({"args": plain_args, **stats}, indent=1) + "\n")
    held = stats["best_heldout_acc"]
    print(f"bc: {len(demos)} demonstrations, best epoch {stats['best_epoch']}: train acc "
          f"{stats['best_train_acc']:.3f}, held-out acc {'-' if held is None else f'{held:.3f}'} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
