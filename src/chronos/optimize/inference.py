"""Seed-compatible CPU inference: load a checkpoint, extract features, predict a transform sequence.

The names and call shapes are the seed's `inference.py` (shared/SEED.md, "Quick Start" and "Programmatic
Usage"), so its examples run with `chronos.optimize.inference` in place of `inference`.

Checkpoints are read and written by chronos.rl.checkpoint (re-exported here): plain dicts that
`torch.load(path, weights_only=True)` accepts, with a content hash; nothing else is ever unpickled.
`predict_transforms` decodes through chronos.rl.decode, the same observation, legality rule (KernelSpace)
and greedy decoder that GRPO evaluates with, so a raw PTX and the training env get the same answer.

    python -m chronos.optimize.inference --checkpoint models/checkpoint_best.pt [--ptx kernel.ptx]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from chronos.actions import ACTION_NAMES, STOP, get_action_history, get_action_mask
from chronos.config import EnvConfig, PredictConfig
from chronos.errors import ChronosError, one_line
from chronos.features.seed import FEATURE_NAMES, NUM_FEATURES, extract_features_from_ptx
from chronos.rl.checkpoint import CHECKPOINT_FORMAT, load_model, save_checkpoint
from chronos.rl.decode import KernelSpace, greedy_decode
from chronos.rl.policy import TransformPolicy

__all__ = [
    "ACTION_NAMES", "CHECKPOINT_FORMAT", "TransformPolicy", "extract_features_from_ptx", "get_action_history",
    "get_action_mask", "load_model", "main", "predict_transforms", "save_checkpoint",
]


def predict_transforms(model: TransformPolicy, ptx, max_steps: int = PredictConfig.max_steps, *,
                       ptxas_legality: bool = EnvConfig.ptxas_legality) -> list[str]:
    """Greedy rollout: the action names the policy picks for `ptx` (PTX source text or a parsed Module).

    Each step sees the variant of the set chosen so far (features, mask, history), under the env's legality
    rule: an action is allowed when the canonical realisation of the set plus it succeeds; `ptxas_legality`
    also asks ptxas about register budgets (EnvConfig's knob, off as in training). `stop` ends the rollout.
    Raises ChronosError when `model` or `ptx` is not of a usable type, PTXParseError for malformed PTX.
    """
    from chronos.ptx import Module, parse

    if not isinstance(model, TransformPolicy):
        raise ChronosError(f"predict_transforms: model must be a TransformPolicy (see load_model), "
                           f"got {type(model).__name__}")
    if isinstance(ptx, str):
        ptx = parse(ptx)
    elif not isinstance(ptx, Module):
        hint = " (decode it first: data.decode())" if isinstance(ptx, bytes | bytearray) else ""
        raise ChronosError(f"predict_transforms: ptx must be PTX source text (str) or a parsed "
                           f"chronos.ptx.Module, got {type(ptx).__name__}{hint}")
    space = KernelSpace(ptx, ptxas_legality=ptxas_legality, action_space=model.action_space)
    return list(greedy_decode([space], model, max_steps)[0].sequence)


def predict_dir(kernels: Path, checkpoint: Path, max_steps: int, action_space: str | None = None) -> dict:
    """Features and the policy's predicted sequence for every .ptx file of a folder, in file-name order.
    `action_space` (params.yaml `actions`): the checkpoint must be of that space (None: any)."""
    files = sorted(kernels.glob("*.ptx"))
    if not files:
        raise ChronosError(f"no .ptx files in {kernels}")
    model = load_model(checkpoint, action_space=action_space)
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


def _demo(model: TransformPolicy, seed: int) -> None:
    """The seed's demo: greedy steps on random (synthetic, not from any kernel) features."""
    g = torch.Generator().manual_seed(seed)
    # Plausible ranges: log1p counts up to ~6 (a few hundred), ratios/fractions/flags in [0, 1].
    scale = torch.tensor([6.0 if n.startswith(("n_", "regs_")) or n == "load_use_distance" else 1.0
                          for n in FEATURE_NAMES])
    features = torch.rand(NUM_FEATURES, generator=g) * scale
    print(f"SYNTHETIC DEMO: random features (seed {seed}), not a real kernel")
    print("features:", " ".join(f"{x:.2f}" for x in features.tolist()))
    applied: list[str] = []
    space = model.action_space
    for step in range(6):
        mask = torch.tensor(get_action_mask(applied, space=space), dtype=torch.float32)
        hist = torch.tensor(get_action_history(applied, space), dtype=torch.float32)
        a = model.get_greedy_action(features, mask, hist)
        if a == STOP:
            print(f"step {step + 1}: stop")
            break
        print(f"step {step + 1}: apply {space.names[a]}")
        applied.append(space.names[a])
    print("sequence:", applied)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (0 ok, 2 on any ChronosError or unreadable input)."""
    ap = argparse.ArgumentParser(prog="chronos.optimize.inference", description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True, help="policy checkpoint (.pt, weights_only loadable)")
    ap.add_argument("--ptx", help="PTX file to predict transforms for; without it, a synthetic demo")
    ap.add_argument("--max-steps", type=int, default=PredictConfig.max_steps,
                    help=f"most transforms to pick (default {PredictConfig.max_steps})")
    ap.add_argument("--ptxas-legality", action="store_true",
                    help="also ask ptxas whether each register budget is accepted (slower)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the synthetic demo's features")
    ap.add_argument("--allow-unhashed", action="store_true",
                    help="read a checkpoint without a content hash (the seed's, chronos-policy-v1): nothing "
                         "can tell a flipped bit in it")
    args = ap.parse_args(argv)
    try:
        model = load_model(args.checkpoint, require_hash=not args.allow_unhashed)
        if args.ptx is None:
            _demo(model, args.seed)
            return 0
        try:
            with open(args.ptx, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ChronosError(f"{args.ptx}: cannot read PTX: {e}") from e
        from chronos.ptx import parse

        actions = predict_transforms(model, parse(text, file=args.ptx), max_steps=args.max_steps,
                                     ptxas_legality=args.ptxas_legality)
        print(f"{args.ptx}: {' '.join(actions) if actions else '(no transform: stop)'}")
        return 0
    except ChronosError as e:
        print(f"chronos.optimize.inference: error: {one_line(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
