"""Stage `grpo`: DA-GRPO from the BC warm start over the gemm_tile kernels (measured or replayed).

    python -m chronos.stages.grpo --params params.yaml --kernels data/kernels/gemm_tile \
        --store data/store/measurements.sqlite --bc models/bc.pt --out-best models/checkpoint_best.pt \
        --out-latest models/checkpoint_latest.pt --result reports/training_result.json \
        --curves reports/grpo_curves.csv

Reads the `grpo:` block (GRPOArgs' fields; `heldout_kernels` falls back to `split.heldout_kernels`) and
`measure:` (backend gpu | replay | auto, and the measurement config that keys the store).
Writes both checkpoints, the per-epoch curves (CSV, one row per epoch, epoch 0 = the BC policy) and
training_result.json: {"args", "best_epoch", "summary": {"train", "heldout"}, "kernels": [{"kernel",
"split": "train" | "heldout", "baseline_cycles", "final_cycles", "sequence", "final_set", "valid", "reason",
"change"}]} for the best checkpoint's greedy rollout on every kernel.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import sys
from pathlib import Path

import torch
import yaml

from chronos.errors import ChronosError


def load_args(params_path: Path):
    from chronos.rl.grpo import GRPOArgs

    params = yaml.safe_load(params_path.read_text()) or {}
    block = dict(params.get("grpo") or {})
    if "heldout_kernels" not in block and (params.get("split") or {}).get("heldout_kernels") is not None:
        block["heldout_kernels"] = list(params["split"]["heldout_kernels"])
    names = {f.name for f in dataclasses.fields(GRPOArgs)}
    unknown = sorted(set(block) - names)
    if unknown:
        raise ChronosError(f"{params_path}: unknown grpo params {unknown}; known: {sorted(names)}")
    return GRPOArgs(**block)


def load_env_kernels(kernels_dir: Path) -> dict:
    """name -> (KernelSpec, root Module) for every spec in kernels_dir/specs.json."""
    from chronos.kernels.spec import load_module, load_specs

    specs_json = Path(kernels_dir) / "specs.json"
    return {s.kernel: (s, load_module(specs_json, s)) for s in load_specs(specs_json)}


def kernel_results(env, policy, args) -> tuple[list[dict], dict]:
    """Per-kernel rows of the policy's greedy rollout, and the train / held-out summaries."""
    from chronos.rl.grpo import greedy_eval, summarize

    held = set(args.heldout_kernels)
    rows = []
    rollouts = greedy_eval(env, policy, env.names, args.max_steps)
    for r in rollouts:
        base, out = env.baseline(r.kernel), r.outcome
        rows.append({"kernel": r.kernel, "split": "heldout" if r.kernel in held else "train",
                     "baseline_cycles": base.cycles, "final_cycles": out.cycles, "sequence": r.sequence,
                     "final_set": list(r.key), "valid": out.valid, "reason": out.reason,
                     "change": out.cycles / base.cycles - 1.0 if out.valid else None})
    summary = {split: summarize(env, [r for r in rollouts if (r.kernel in held) == (split == "heldout")])
               for split in ("train", "heldout")}
    return rows, summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels/gemm_tile"))
    ap.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"))
    ap.add_argument("--bc", type=Path, default=Path("models/bc.pt"))
    ap.add_argument("--out-best", type=Path, default=Path("models/checkpoint_best.pt"))
    ap.add_argument("--out-latest", type=Path, default=Path("models/checkpoint_latest.pt"))
    ap.add_argument("--result", type=Path, default=Path("reports/training_result.json"))
    ap.add_argument("--curves", type=Path, default=Path("reports/grpo_curves.csv"))
    ap.add_argument("--backend", choices=("gpu", "replay", "auto"), help="overrides measure.backend")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)  # byte-identical reruns: threaded reductions reorder float sums
    backend = None
    try:
        from chronos.inference import load_model, save_checkpoint
        from chronos.measure.backend import make_backend
        from chronos.rl.env import EnvConfig, TransformEnv
        from chronos.rl.grpo import train_grpo
        from chronos.stages.baseline import load_measure_params

        args = load_args(a.params)
        name, mcfg = load_measure_params(a.params)
        backend = make_backend(a.backend or name, a.store, mcfg)
        kernels = load_env_kernels(a.kernels)
        env = TransformEnv(kernels, backend, EnvConfig(max_steps=args.max_steps, step_cost=args.step_cost,
                                                       invalid_penalty=args.invalid_penalty))
        reference, policy = load_model(a.bc), load_model(a.bc)
        best, latest, history = train_grpo(policy, reference, env, args,
                                           log=lambda s: print(s, file=sys.stderr))
        best_epoch = history[-1]["best_epoch"]
        plain = dataclasses.asdict(args)
        meta = {"stage": "grpo", "untrained": False, "args": plain, "bc": str(a.bc),
                "torch": str(torch.__version__)}
        for path, state, tag, epoch in ((a.out_best, best, "best", best_epoch),
                                        (a.out_latest, latest, "latest", args.epochs)):
            policy.load_state_dict(state)
            row = history[epoch]
            path.parent.mkdir(parents=True, exist_ok=True)
            save_checkpoint(path, policy, {**meta, "which": tag, "epoch": epoch,
                                           "train_mean_change": row["train_mean_change"],
                                           "heldout_mean_change": row["heldout_mean_change"]})
        policy.load_state_dict(best)
        rows, summary = kernel_results(env, policy, args)
    except (ChronosError, ValueError) as e:
        print(f"grpo: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    finally:
        if backend is not None and hasattr(backend, "close"):
            backend.close()
    a.result.parent.mkdir(parents=True, exist_ok=True)
    a.result.write_text(json.dumps({"args": plain, "best_epoch": best_epoch, "summary": summary,
                                    "kernels": rows}, indent=1) + "\n")
    a.curves.parent.mkdir(parents=True, exist_ok=True)
    # Wall-clock time stays out of the curves, so that a rerun reproduces them byte for byte.
    fields = sorted({k for h in history for k in h} - {"elapsed_s"}, key=lambda k: (k != "epoch", k))
    with a.curves.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(history)
    tr, ho = summary["train"], summary["heldout"]
    print(f"grpo: best epoch {best_epoch} (by the train kernels' mean change): train {tr['mean_change']:+.2%}, "
          f"held-out {'n/a' if ho['mean_change'] is None else format(ho['mean_change'], '+.2%')} -> {a.out_best}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
