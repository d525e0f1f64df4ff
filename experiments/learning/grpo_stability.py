"""Long DA-GRPO runs on replay, for the late collapse of #6 (issue #14 item 4): reports/grpo_stability/.

    PYTHONPATH=src python experiments/learning/grpo_stability.py run --out /tmp/gs/base --set epochs=600
    PYTHONPATH=src python experiments/learning/grpo_stability.py run --out /tmp/gs/fix \
        --set epochs=1500 --set off_policy_ratio=behaviour
    PYTHONPATH=src python experiments/learning/grpo_stability.py plot --out reports/grpo_stability/curves.png
        \\ base=/tmp/gs/base/curves.csv fix=/tmp/gs/fix/curves.csv

`run` trains exactly as stage grpo does (params.yaml's grpo block with `--set key=value` overrides, the
split, models/bc.pt, the store and atlas on replay, one thread) but keeps the curves of a run that diverges,
and adds per epoch the fraction of train / held-out kernels whose greedy decode stops at once
(train_stop_first, heldout_stop_first) and the train kernels' mean probability of stop there
(train_p_stop_first); these read the policy without sampling, so the run is the stage's.
It writes curves.csv (no wall time, as the stage's) and summary.json (the config, wall time, the divergence
and collapse epochs and the last epoch's numbers). Nothing in models/ or reports/ is written by `run`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from chronos import config as chronos_config
from chronos.actions import STOP
from chronos.errors import TrainingDivergedError
from chronos.rl.checkpoint import load_model
from chronos.rl.decode import greedy_decode, split_obs
from chronos.rl.env import TransformEnv, load_env_kernels
from chronos.rl.grpo import train_grpo, write_curves
from chronos.search.atlas_replay import backend_with_atlas

COLLAPSE_FRACTION = 0.5  # collapsed: the train kernels' mean change has lost over half of the BC start's ...
COLLAPSE_HOLD = 25  # ... and stays so for this many epochs (or to the end of the run)


def _value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def grpo_config(params: Path, sets: list[str]) -> chronos_config.Config:
    cfg = chronos_config.load(params)
    block = dataclasses.asdict(cfg.grpo)
    for item in sets:
        key, _, text = item.partition("=")
        block[key] = _value(text)
    grpo = chronos_config.build(chronos_config.GRPOConfig, block, "grpo")
    return dataclasses.replace(cfg, grpo=grpo)


def collapse_epoch(history: list[dict]) -> int | None:
    """First epoch from which the train kernels' greedy mean change is above COLLAPSE_FRACTION of epoch 0's
    for COLLAPSE_HOLD epochs (or to the end)."""
    start = history[0]["train_mean_change"]
    bad = [h["train_mean_change"] > COLLAPSE_FRACTION * start for h in history]
    for i, _ in enumerate(bad):
        window = bad[i:i + COLLAPSE_HOLD]
        if window and all(window) and (len(window) == COLLAPSE_HOLD or i + len(window) == len(bad)):
            return history[i]["epoch"]
    return None


def run(args) -> int:
    torch.set_num_threads(1)
    cfg = grpo_config(args.params, args.set)
    cfg = dataclasses.replace(cfg, grpo=dataclasses.replace(cfg.grpo, log_interval=1))
    heldout = list(cfg.split.heldout_kernels)
    backend = backend_with_atlas("replay", args.store, cfg.measure)
    stops: dict[int, dict] = {}
    try:
        env = TransformEnv(load_env_kernels(args.kernels), backend, cfg.grpo.env, action_space=cfg.actions)
        reference, policy = (load_model(args.bc, action_space=cfg.actions) for _ in range(2))
        train = [k for k in env.names if k not in heldout]
        held = [k for k in heldout if k in env.kernels]

        def stop_first(kernels: list[str]) -> float:
            decoded = greedy_decode([env.space(k) for k in kernels], policy, cfg.grpo.max_steps)
            return sum(not d.sequence for d in decoded) / len(kernels)

        def p_stop_first(kernels: list[str]) -> float:
            """Mean probability of stop at the untransformed kernel (temperature 1)."""
            with torch.no_grad():
                obs = torch.from_numpy(np.stack([env.space(k).obs(()) for k in kernels]))
                return torch.softmax(policy(*split_obs(obs)), -1)[:, STOP].mean().item()

        def measures() -> dict:
            return {"train_stop_first": stop_first(train), "heldout_stop_first": stop_first(held),
                    "train_p_stop_first": p_stop_first(train)}

        def log(line: str) -> None:
            epoch = int(line.split()[2])
            stops[epoch] = measures()
            if args.save_every and epoch % args.save_every == 0:
                (args.out / "policies").mkdir(parents=True, exist_ok=True)
                torch.save(policy.state_dict(), args.out / "policies" / f"epoch{epoch:04d}.pt")
            if epoch % 25 == 0 or epoch == cfg.grpo.epochs:
                print(line, f"stop-first {stops[epoch]['train_stop_first']:.2f} "
                      f"p(stop|s0) {stops[epoch]['train_p_stop_first']:.3f}", file=sys.stderr, flush=True)

        stops[0] = measures()
        t0 = time.perf_counter()
        diverged = None
        try:
            _, _, history = train_grpo(policy, reference, env, cfg.grpo, heldout_kernels=heldout, log=log)
        except TrainingDivergedError as e:
            history, diverged = e.history, {"epoch": e.epoch, "error": str(e)}
        wall = time.perf_counter() - t0
    finally:
        backend.close()
    for h in history:
        h.update(stops.get(h["epoch"], {}))
    args.out.mkdir(parents=True, exist_ok=True)
    write_curves(args.out / "curves.csv", history)
    last = history[-1]
    keep = ("train_mean_change", "heldout_mean_change", "train_mean_log_gain", "heldout_mean_log_gain",
            "train_distinct", "heldout_distinct", "train_stop_first", "heldout_stop_first",
            "train_p_stop_first", "kl", "clip_frac")
    summary = {"grpo": dataclasses.asdict(cfg.grpo), "epochs_run": last["epoch"], "wall_s": round(wall, 1),
               "s_per_epoch": round(wall / max(last["epoch"], 1), 3), "diverged": diverged,
               "collapse_epoch": collapse_epoch(history), "best_epoch": last["best_epoch"],
               "last": {k: last.get(k) for k in keep}}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "grpo"}), flush=True)
    return 0


PANELS = (("train_mean_change", "train mean cycle change (%)", 100),
          ("heldout_mean_change", "held-out mean cycle change (%)", 100),
          ("train_stop_first", "train kernels decoded to stop at once (%)", 100),
          ("train_p_stop_first", "mean p(stop) at the untransformed train kernel (%)", 100),
          ("kl", "KL(policy || BC) on the batch", 1),
          ("mean_reward", "mean rollout reward", 1))


def plot(args) -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {name: pd.read_csv(path) for name, _, path in (s.partition("=") for s in args.runs)}
    fig, axes = plt.subplots(3, 2, figsize=(11, 9), sharex=True)
    for ax, (col, title, scale) in zip(axes.flat, PANELS, strict=True):
        for i, (name, df) in enumerate(runs.items()):
            if col in df and df[col].notna().any():  # one colour per run in every panel
                ax.plot(df["epoch"], scale * df[col], label=name, lw=0.8, color=f"C{i}")
                ax.plot(df["epoch"].iloc[-1], scale * df[col].iloc[-1], "x", color=f"C{i}")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("epoch (0 = BC warm start)")
    fig.suptitle("DA-GRPO on replay (gemm_tile, lr 1e-3): greedy decode per epoch; x = a run's last epoch",
                 fontsize=10)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(args.out)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--params", type=Path, default=Path("params.yaml"))
    r.add_argument("--set", action="append", default=[], help="grpo key=value (JSON value, else a string)")
    r.add_argument("--kernels", type=Path, default=Path("data/kernels/gemm_tile"))
    r.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"))
    r.add_argument("--bc", type=Path, default=Path("models/bc.pt"))
    r.add_argument("--save-every", type=int, default=0, help="keep the policy's weights every N epochs")
    p = sub.add_parser("plot")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("runs", nargs="+", help="name=curves.csv")
    args = ap.parse_args(argv)
    return run(args) if args.cmd == "run" else plot(args)


if __name__ == "__main__":
    sys.exit(main())
