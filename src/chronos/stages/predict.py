"""Stage `predict`: features and the policy's predicted transform sequence for every kernel.

    python -m chronos.stages.predict --params params.yaml --kernels data/kernels/gemm_tile \
        --checkpoint models/checkpoint_best.pt --out reports/predictions.json

Reads ``predict.max_steps``. Writes {"checkpoint", "untrained", "max_steps", "kernels": [{"kernel",
"features": {name: value}, "predicted": [action, ...]}]}, kernels in file-name order.
"""

from __future__ import annotations

import sys
from pathlib import Path

from chronos.optimize.inference import predict_dir
from chronos.stages.common import run_stage, write_json


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels/gemm_tile"))
    ap.add_argument("--checkpoint", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path("reports/predictions.json"))


def _body(args, cfg) -> int:
    result = predict_dir(args.kernels, args.checkpoint, cfg.predict.max_steps, action_space=cfg.actions)
    write_json(args.out, result)
    if result["untrained"]:
        print("predict: WARNING: the checkpoint is UNTRAINED; these predictions mean nothing",
              file=sys.stderr)
    print(f"predict: {len(result['kernels'])} kernels -> {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("predict", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
