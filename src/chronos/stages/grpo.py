"""Stage `grpo`: DA-GRPO from the BC warm start over the gemm_tile kernels (measured or replayed).

    python -m chronos.stages.grpo --params params.yaml --kernels data/kernels/gemm_tile \
        --store data/store/measurements.sqlite --bc models/bc.pt --out-best models/checkpoint_best.pt \
        --out-latest models/checkpoint_latest.pt --result reports/training_result.json \
        --curves reports/grpo_curves.csv

Reads the `grpo:` block, `split.heldout_kernels` and
`measure:` (backend gpu | replay | auto, and the measurement config that keys the store).
Writes both checkpoints, the per-epoch curves (CSV, one row per epoch, epoch 0 = the BC policy) and
training_result.json: {"args", "best_epoch", "summary": {"train", "heldout"}, "kernels": [{"kernel",
"split": "train" | "heldout", "baseline_cycles", "final_cycles", "sequence", "final_set", "valid", "reason",
"change"}]} for the best checkpoint's greedy rollout on every kernel.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import torch

from chronos.rl.checkpoint import load_model, save_checkpoint
from chronos.rl.env import TransformEnv, load_env_kernels
from chronos.rl.grpo import greedy_eval, summarize, train_grpo, write_curves
from chronos.rl.recorded import (
    RecordedTraining,
    add_recorded_arguments,
    file_sha256,
    folder_sha256,
    training_key,
)
from chronos.stages.common import run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def args_record(cfg, heldout: list[str]) -> dict:
    """The settings as training_result.json has always recorded them (the split before log_interval)."""
    d = dataclasses.asdict(cfg)
    log_interval = d.pop("log_interval")
    if d["off_policy_ratio"] == "current":  # recorded only when set otherwise: the committed records stay
        del d["off_policy_ratio"]
    return {**d, "train_kernels": None, "heldout_kernels": heldout, "log_interval": log_interval}


def kernel_results(env, policy, max_steps: int, heldout: set[str]) -> tuple[list[dict], dict]:
    """Per-kernel rows of the policy's greedy rollout, and the train / held-out summaries."""
    rows = []
    rollouts = greedy_eval(env, policy, env.names, max_steps)
    for r in rollouts:
        base, out = env.baseline(r.kernel), r.outcome
        rows.append({"kernel": r.kernel, "split": "heldout" if r.kernel in heldout else "train",
                     "baseline_cycles": base.cycles, "final_cycles": out.cycles, "sequence": r.sequence,
                     "final_set": list(r.key), "valid": out.valid, "reason": out.reason,
                     "change": out.cycles / base.cycles - 1.0 if out.valid else None})
    summary = {split: summarize(env, [r for r in rollouts if (r.kernel in heldout) == (split == "heldout")])
               for split in ("train", "heldout")}
    return rows, summary


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels/gemm_tile"))
    ap.add_argument("--bc", type=Path, default=Path("models/bc.pt"))
    ap.add_argument("--out-best", type=Path, default=Path("models/checkpoint_best.pt"))
    ap.add_argument("--out-latest", type=Path, default=Path("models/checkpoint_latest.pt"))
    ap.add_argument("--result", type=Path, default=Path("reports/training_result.json"))
    ap.add_argument("--curves", type=Path, default=Path("reports/grpo_curves.csv"))
    add_backend_arguments(ap)
    add_recorded_arguments(ap, "grpo")


def _save(args, policy, cfg, record: dict, best, latest, history) -> int:
    """Both checkpoints; returns the best epoch."""
    best_epoch = history[-1]["best_epoch"]
    meta = {"stage": "grpo", "untrained": False, "args": record,
            "bc": str(args.bc), "torch": str(torch.__version__)}
    for path, state, tag, epoch in ((args.out_best, best, "best", best_epoch),
                                    (args.out_latest, latest, "latest", cfg.grpo.epochs)):
        policy.load_state_dict(state)
        row = history[epoch]
        path.parent.mkdir(parents=True, exist_ok=True)
        save_checkpoint(path, policy, {**meta, "which": tag, "epoch": epoch,
                                       "train_mean_change": row["train_mean_change"],
                                       "heldout_mean_change": row["heldout_mean_change"]})
    return best_epoch


def training_io(args, cfg) -> tuple[dict, dict]:
    """What the training reads (the key of its record, chronos.rl.recorded; the store is left out: it only
    grows) and the files it writes."""
    inputs = {"grpo": dataclasses.asdict(cfg.grpo), "heldout_kernels": list(cfg.split.heldout_kernels),
              "actions": cfg.actions, "measure": cfg.measure.config_hash(), "bc": file_sha256(args.bc),
              "kernels": folder_sha256(args.kernels)}
    return inputs, {"checkpoint_best.pt": args.out_best, "checkpoint_latest.pt": args.out_latest,
                    "training_result.json": args.result, "grpo_curves.csv": args.curves}


def _body(args, cfg) -> int:
    torch.set_num_threads(1)  # byte-identical reruns: threaded reductions reorder float sums
    heldout = list(cfg.split.heldout_kernels)
    record = args_record(cfg.grpo, heldout)
    inputs, outputs = training_io(args, cfg)
    key, recorded = training_key(inputs), RecordedTraining(args.recorded, "grpo")
    if not args.retrain and (meta := recorded.replay(key, outputs)):
        print(f"grpo: {recorded.describe(meta)} -> {args.out_best}")
        return 0
    backend = open_backend(args, cfg)
    try:
        env = TransformEnv(load_env_kernels(args.kernels), backend, cfg.grpo.env, action_space=cfg.actions)
        reference, policy = (load_model(args.bc, action_space=cfg.actions) for _ in range(2))
        best, latest, history = train_grpo(policy, reference, env, cfg.grpo, heldout_kernels=heldout,
                                           log=lambda s: print(s, file=sys.stderr))
        best_epoch = _save(args, policy, cfg, record, best, latest, history)
        policy.load_state_dict(best)
        rows, summary = kernel_results(env, policy, cfg.grpo.max_steps, set(heldout))
    finally:
        backend.close()
    write_json(args.result, {"args": record, "best_epoch": best_epoch, "summary": summary, "kernels": rows})
    write_curves(args.curves, history)
    if args.write_record:
        recorded.save(key, inputs, outputs)
    tr, ho = summary["train"], summary["heldout"]
    print(f"grpo: best epoch {best_epoch} (by the train kernels' mean change): "
          f"train {tr['mean_change']:+.2%}, "
          f"held-out {'n/a' if ho['mean_change'] is None else format(ho['mean_change'], '+.2%')} "
          f"-> {args.out_best}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("grpo", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
