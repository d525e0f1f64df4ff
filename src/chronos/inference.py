"""Seed-compatible CPU inference: load a checkpoint, extract features, predict a transform sequence.

The names and call shapes are the seed's `inference.py` (shared/SEED.md, "Quick Start" and "Programmatic
Usage"), so its examples run with `chronos.inference` in place of `inference`.

A checkpoint is a plain dict that `torch.load(path, weights_only=True)` accepts:
    {"format": "chronos-policy-v1", "hidden": 128, "policy": <state dict>, "metadata": {...plain types...}}
`load_model` never unpickles anything else: a checkpoint that needs arbitrary code to load is refused.

    python -m chronos.inference --checkpoint models/checkpoint_best.pt [--ptx kernel.ptx]
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

import torch

from chronos.actions import ACTION_NAMES, STOP, get_action_history, get_action_mask
from chronos.errors import CheckpointError, ChronosError
from chronos.features import FEATURE_NAMES, NUM_FEATURES, extract_features, extract_features_from_ptx
from chronos.rl.policy import TransformPolicy

__all__ = [
    "ACTION_NAMES", "TransformPolicy", "extract_features_from_ptx", "get_action_history", "get_action_mask",
    "load_model", "main", "predict_transforms", "save_checkpoint",
]

CHECKPOINT_FORMAT = "chronos-policy-v1"

LegalFn = Callable[[Any, frozenset], Iterable[str]]


def _check_plain(value: Any, where: str) -> None:
    """Metadata must survive weights_only loading: only str/int/float/bool/None, lists and str-keyed dicts.

    Exact types, not isinstance: subclasses such as torch.__version__ (a str subclass) or an IntEnum save
    fine but are refused by weights_only=True when loading.
    """
    if value is None or type(value) in (str, int, float, bool):
        return
    if type(value) in (list, tuple):
        for i, v in enumerate(value):
            _check_plain(v, f"{where}[{i}]")
        return
    if type(value) is dict:
        for k, v in value.items():
            if type(k) is not str:
                raise CheckpointError(f"metadata key {k!r} at {where} is not a string")
            _check_plain(v, f"{where}.{k}")
        return
    raise CheckpointError(f"metadata value at {where} has type {type(value).__name__}; "
                          "only str, int, float, bool, None, list and dict are allowed")


def _explain_unpickling(msg: str) -> str:
    """Reduce torch's long weights_only message to the one fact that matters.

    torch's text advises retrying with weights_only=False; we never do, so that advice is dropped.
    """
    m = re.search(r"Unsupported global: GLOBAL (\S+)", msg)
    if m:
        return (f"not loadable with weights_only=True: it pickles {m.group(1)}, which is neither a tensor "
                "nor a plain type; refusing to unpickle it (a checkpoint must hold only tensors and plain "
                "metadata)")
    m = re.search(r"WeightsUnpickler error:\s*(.+?)\s*(?:\n\n|$)", msg, re.DOTALL)
    detail = " ".join(m.group(1).split()) if m else "unpickling failed"
    return f"not a readable torch checkpoint ({detail}; weights_only=True)"


def save_checkpoint(path: str | os.PathLike, policy: TransformPolicy, metadata: dict | None = None) -> None:
    """Write `policy` and plain-typed `metadata` as a checkpoint that loads with weights_only=True."""
    metadata = dict(metadata or {})
    _check_plain(metadata, "metadata")
    state = {k: v.detach().cpu().clone() for k, v in policy.state_dict().items()}
    torch.save({"format": CHECKPOINT_FORMAT, "hidden": int(policy.hidden), "policy": state,
                "metadata": metadata}, os.fspath(path))


def load_model(path: str | os.PathLike) -> TransformPolicy:
    """Load a checkpoint with `torch.load(weights_only=True)` only; the model comes back in eval mode.

    The checkpoint's metadata is attached as `model.metadata`. Raises CheckpointError naming the path and the
    problem for a missing file, a pickle that needs arbitrary objects, a dict without "policy", or weights
    whose shapes do not fit the policy.
    """
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise CheckpointError(f"{p}: checkpoint file not found")
    try:
        ckpt = torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        raise CheckpointError(f"{p}: {_explain_unpickling(str(e))}") from e
    except Exception as e:  # torch raises RuntimeError/EOFError/... for files that are not checkpoints
        raise CheckpointError(f"{p}: not a readable torch checkpoint: {type(e).__name__}: {e}") from e
    if not isinstance(ckpt, dict) or "policy" not in ckpt:
        got = sorted(map(str, ckpt)) if isinstance(ckpt, dict) else type(ckpt).__name__
        raise CheckpointError(f"{p}: expected a dict with a 'policy' state dict, got {got}")
    state = ckpt["policy"]
    if not isinstance(state, dict):
        raise CheckpointError(f"{p}: 'policy' is a {type(state).__name__}, not a state dict")
    hidden = ckpt.get("hidden")
    if not isinstance(hidden, int):  # seed checkpoints carry no "hidden": read it off the first layer
        w = state.get("net.0.weight")
        hidden = int(w.shape[0]) if isinstance(w, torch.Tensor) and w.dim() == 2 else 128
    model = TransformPolicy(hidden=hidden)
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        raise CheckpointError(f"{p}: weights do not fit TransformPolicy(hidden={hidden}): "
                              f"{' '.join(str(e).split())}") from e
    model.eval()
    meta = ckpt.get("metadata", {})
    model.metadata = meta if isinstance(meta, dict) else {}
    return model


def predict_transforms(model: TransformPolicy, ptx, max_steps: int = 6,
                       legal_fn: LegalFn | None = None) -> list[str]:
    """Greedy rollout: the action names the policy picks for `ptx` (source text or a parsed Module).

    Each step sees the kernel as transformed so far: its features are re-extracted after every applied
    action, and the mask is `get_action_mask(applied, legal)` with `legal = legal_fn(module, applied)`
    (default: `chronos.transforms.legal_actions`, i.e. only transforms proven legal on this kernel). `stop`
    ends the rollout.
    """
    from chronos.ptx import parse
    from chronos.transforms import apply, legal_actions

    module = parse(ptx) if isinstance(ptx, str) else ptx
    legal_fn = legal_fn or legal_actions
    applied: list[str] = []
    for _ in range(max_steps):
        legal = legal_fn(module, frozenset(applied))
        feat_t = torch.tensor(extract_features(module), dtype=torch.float32)
        mask = get_action_mask(applied, legal)
        action = model.get_greedy_action(feat_t, torch.tensor(mask, dtype=torch.float32),
                                         torch.tensor(get_action_history(applied), dtype=torch.float32))
        if action == STOP:
            break
        module = apply(module, ACTION_NAMES[action])
        applied.append(ACTION_NAMES[action])
    return applied


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
    for step in range(6):
        mask = torch.tensor(get_action_mask(applied), dtype=torch.float32)
        hist = torch.tensor(get_action_history(applied), dtype=torch.float32)
        a = model.get_greedy_action(features, mask, hist)
        if a == STOP:
            print(f"step {step + 1}: stop")
            break
        print(f"step {step + 1}: apply {ACTION_NAMES[a]}")
        applied.append(ACTION_NAMES[a])
    print("sequence:", applied)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (0 ok, 2 on any ChronosError or unreadable input)."""
    ap = argparse.ArgumentParser(prog="chronos.inference", description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True, help="policy checkpoint (.pt, weights_only loadable)")
    ap.add_argument("--ptx", help="PTX file to predict transforms for; without it, a synthetic demo")
    ap.add_argument("--max-steps", type=int, default=6, help="most transforms to pick (default 6)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the synthetic demo's features")
    args = ap.parse_args(argv)
    try:
        model = load_model(args.checkpoint)
        if args.ptx is None:
            _demo(model, args.seed)
            return 0
        try:
            with open(args.ptx, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ChronosError(f"{args.ptx}: cannot read PTX: {e}") from e
        from chronos.ptx import parse

        actions = predict_transforms(model, parse(text, file=args.ptx), max_steps=args.max_steps)
        print(f"{args.ptx}: {' '.join(actions) if actions else '(no transform: stop)'}")
        return 0
    except ChronosError as e:
        print(f"chronos.inference: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
