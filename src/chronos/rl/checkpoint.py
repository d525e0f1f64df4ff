"""Policy checkpoints: the one writer (`save_checkpoint`) and the one reader (`load_model`).

A checkpoint is a plain dict that `torch.load(path, weights_only=True)` accepts:

    {"format": "chronos-policy-v2", "hidden": 128, "policy": <state dict>, "metadata": {...plain types...},
     "sha256": <content_hash(...)>}

`load_model` never unpickles anything else: a file that needs arbitrary code to load is refused. Everything is
checked before the network is built, so a bad file costs no allocation: `hidden` is a positive int, the state
dict has exactly the policy's keys, each a float32 tensor of the shape `hidden` implies; then the content hash
(a bit flip anywhere in the weights, `hidden`, `format` or the metadata is caught), then that every weight is
finite.

Files without a hash (this project's "chronos-policy-v1" and the seed's bare {"policy": ...}) predate it:
there is nothing to check a bit flip against, so they load after the same structural checks unless the
caller passes `require_hash=True`, which refuses them (the pipeline writes v2 only, so its stages can insist).
A v2 file without its hash is always refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
from typing import Any

import torch

from chronos.errors import CheckpointError
from chronos.rl.policy import TransformPolicy, state_shapes

CHECKPOINT_FORMAT = "chronos-policy-v2"
LEGACY_FORMATS = (None, "chronos-policy-v1")  # None: the seed's checkpoints carry no format key


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


def content_hash(fmt: str, hidden: int, state: dict[str, torch.Tensor], metadata: dict) -> str:
    """sha256 over format, hidden, the metadata (sorted-key JSON) and every tensor in sorted key order
    (name, dtype, shape and raw bytes, so that a renamed or reshaped tensor changes it too)."""
    h = hashlib.sha256()
    h.update(json.dumps({"format": fmt, "hidden": hidden, "metadata": metadata}, sort_keys=True).encode())
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        h.update(f"\n{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def save_checkpoint(path: str | os.PathLike, policy: TransformPolicy, metadata: dict | None = None) -> str:
    """Write `policy` and plain-typed `metadata` as a v2 checkpoint (weights_only loadable); returns its hash.
    Non-finite weights are refused here rather than written and refused at load."""
    metadata = dict(metadata or {})
    _check_plain(metadata, "metadata")
    state = {k: v.detach().cpu().clone() for k, v in policy.state_dict().items()}
    bad = [k for k, v in state.items() if not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(f"{os.fspath(path)}: refusing to save non-finite weights ({', '.join(bad)})")
    hidden = int(policy.hidden)
    digest = content_hash(CHECKPOINT_FORMAT, hidden, state, metadata)
    torch.save({"format": CHECKPOINT_FORMAT, "hidden": hidden, "policy": state, "metadata": metadata,
                "sha256": digest}, os.fspath(path))
    return digest


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


def _read(p: str) -> dict:
    """The checkpoint dict, loaded with weights_only=True only."""
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
    fmt = ckpt.get("format")
    if fmt != CHECKPOINT_FORMAT and fmt not in LEGACY_FORMATS:
        raise CheckpointError(f"{p}: unknown checkpoint format {fmt!r}; expected {CHECKPOINT_FORMAT!r}")
    state = ckpt["policy"]
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise CheckpointError(f"{p}: 'policy' is not a state dict of named tensors")
    return ckpt


def _hidden(ckpt: dict, p: str) -> int:
    """The hidden width: the file's "hidden", or (the seed's files have none) the first layer's rows."""
    hidden = ckpt.get("hidden")
    if hidden is None and ckpt.get("format") is None:
        w = ckpt["policy"].get("net.0.weight")
        hidden = int(w.shape[0]) if isinstance(w, torch.Tensor) and w.dim() == 2 else None
    if type(hidden) is not int or hidden < 1:
        raise CheckpointError(f"{p}: hidden must be a positive int, got {hidden!r}")
    return hidden


def _check_state(state: dict, hidden: int, p: str) -> None:
    """Exactly the policy's keys, each float32 of the shape `hidden` implies (checked before building)."""
    want = state_shapes(hidden)
    missing, extra = sorted(set(want) - set(state)), sorted(set(state) - set(want))
    problems = [f"missing {missing}"] if missing else []
    problems += [f"unexpected {extra}"] if extra else []
    for name in sorted(set(want) & set(state)):
        t = state[name]
        if tuple(t.shape) != want[name]:
            problems.append(f"{name} has shape {tuple(t.shape)}, expected {want[name]}")
        elif t.dtype != torch.float32 or t.layout != torch.strided:
            problems.append(f"{name} is {t.dtype} ({t.layout}), expected torch.float32 (strided)")
    if problems:
        raise CheckpointError(f"{p}: weights do not fit TransformPolicy(hidden={hidden}): "
                              f"{'; '.join(problems)}")


def _check_hash(ckpt: dict, hidden: int, metadata: dict, p: str, require_hash: bool) -> str | None:
    stored = ckpt.get("sha256")
    if stored is None:
        if ckpt.get("format") == CHECKPOINT_FORMAT or require_hash:
            raise CheckpointError(f"{p}: no content hash (format {ckpt.get('format')!r}), so it cannot be "
                                  "verified; regenerate it with the current chronos (dvc repro)")
        return None
    actual = content_hash(ckpt.get("format"), hidden, ckpt["policy"], metadata)
    if stored != actual:
        raise CheckpointError(f"{p}: content hash mismatch (stored {str(stored)[:16]}..., actual "
                              f"{actual[:16]}...): the file is corrupted or was edited")
    return actual


def load_model(path: str | os.PathLike, *, require_hash: bool = False) -> TransformPolicy:
    """Load a checkpoint with `torch.load(weights_only=True)` only; the model comes back in eval mode.

    Attaches the checkpoint's metadata as `model.metadata` and its verified hash as `model.content_hash`
    (None for a legacy file without one). Raises CheckpointError naming the path and the problem: a missing
    or unreadable file, a pickle that needs arbitrary objects, a bad `hidden`, weights of the wrong keys,
    shapes or dtype, a content-hash mismatch, non-finite weights; with `require_hash`, a file without a hash.
    """
    p = os.fspath(path)
    ckpt = _read(p)
    hidden = _hidden(ckpt, p)
    state = ckpt["policy"]
    _check_state(state, hidden, p)
    metadata = ckpt.get("metadata", {})
    if not isinstance(metadata, dict):
        raise CheckpointError(f"{p}: metadata is a {type(metadata).__name__}, not a dict")
    digest = _check_hash(ckpt, hidden, metadata, p, require_hash)
    bad = [k for k, v in state.items() if not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(f"{p}: non-finite weights (NaN or Inf) in {', '.join(sorted(bad))}")
    model = TransformPolicy(hidden=hidden)
    model.load_state_dict(state)
    model.eval()
    model.metadata = metadata
    model.content_hash = digest
    return model
