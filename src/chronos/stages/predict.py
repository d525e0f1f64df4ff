"""Stage `predict`: features and the policy's predicted transform sequence for every kernel.

    python -m chronos.stages.predict --params params.yaml --kernels data/kernels/gemm_tile \
        --checkpoint models/untrained.pt --out reports/predictions.json

Reads ``predict.max_steps``. Writes {"checkpoint", "untrained", "max_steps", "kernels": [{"kernel",
"features": {name: value}, "predicted": [action, ...]}]}, kernels in file-name order.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from chronos.errors import ChronosError

DEFAULTS = {"max_steps": 6}


def load_config(params_path: Path) -> dict:
    params = yaml.safe_load(params_path.read_text()) or {}
    cfg = params.get("predict") or {}
    return {key: cfg.get(key, default) for key, default in DEFAULTS.items()}


def predict_dir(kernels: Path, checkpoint: Path, max_steps: int) -> dict:
    from chronos.features import FEATURE_NAMES, extract_features_from_ptx
    from chronos.inference import load_model, predict_transforms

    files = sorted(kernels.glob("*.ptx"))
    if not files:
        raise ChronosError(f"no .ptx files in {kernels}")
    model = load_model(checkpoint)
    untrained = bool(getattr(model, "metadata", {}).get("untrained", False))
    rows = []
    for f in files:
        text = f.read_text()
        feats = extract_features_from_ptx(text, file=str(f))
        rows.append({
            "kernel": f.stem,
            "features": dict(zip(FEATURE_NAMES, feats, strict=True)),
            "predicted": predict_transforms(model, text, max_steps=max_steps),
        })
    return {"checkpoint": str(checkpoint), "untrained": untrained, "max_steps": max_steps, "kernels": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels/gemm_tile"))
    ap.add_argument("--checkpoint", type=Path, default=Path("models/untrained.pt"))
    ap.add_argument("--out", type=Path, default=Path("reports/predictions.json"))
    args = ap.parse_args(argv)
    try:
        result = predict_dir(args.kernels, args.checkpoint, int(load_config(args.params)["max_steps"]))
    except ChronosError as e:
        print(f"predict: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    if result["untrained"]:
        print("predict: WARNING: the checkpoint is UNTRAINED; these predictions mean nothing", file=sys.stderr)
    print(f"predict: {len(result['kernels'])} kernels -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
