"""Stage `init_policy`: write an UNTRAINED policy checkpoint (seeded random weights).

    python -m chronos.stages.init_policy --params params.yaml --out models/untrained.pt

It exists so that `predict` runs end to end before behaviour cloning and GRPO do; its predictions mean
nothing. Reads ``policy.{hidden,dropout,seed}``. The metadata says `"untrained": true` so every consumer
can tell.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import yaml

from chronos.errors import ChronosError

DEFAULTS = {"hidden": 128, "dropout": 0.1, "seed": 0}


def load_config(params_path: Path) -> dict:
    params = yaml.safe_load(params_path.read_text()) or {}
    cfg = params.get("policy") or {}
    return {key: cfg.get(key, default) for key, default in DEFAULTS.items()}


def write_untrained(cfg: dict, out: Path) -> dict:
    from chronos.inference import save_checkpoint
    from chronos.rl.policy import TransformPolicy

    torch.manual_seed(int(cfg["seed"]))  # the weights are a pure function of params.yaml
    policy = TransformPolicy(hidden=int(cfg["hidden"]), dropout=float(cfg["dropout"]))
    metadata = {
        "untrained": True,
        "label": "UNTRAINED: seeded random initialisation, not a learned policy",
        "stage": "init_policy",
        "seed": int(cfg["seed"]),
        "hidden": int(cfg["hidden"]),
        "dropout": float(cfg["dropout"]),
        "torch": str(torch.__version__),  # TorchVersion would not load with weights_only=True
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(out, policy, metadata)
    return metadata


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--out", type=Path, default=Path("models/untrained.pt"))
    args = ap.parse_args(argv)
    try:
        meta = write_untrained(load_config(args.params), args.out)
    except ChronosError as e:
        print(f"init_policy: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    print(f"init_policy: wrote UNTRAINED checkpoint {args.out} (seed {meta['seed']}, hidden {meta['hidden']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
