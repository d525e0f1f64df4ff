"""Policy checkpoints: the one writer (`save_checkpoint`) and the one reader (`load_model`).

A checkpoint is a plain dict that `torch.load(path, weights_only=True)` accepts:

    {"format": "chronos-policy-v2", "hidden": 128, "policy": <state dict>, "metadata": {...plain types...},
     "sha256": <content_hash(...)>}

`load_model` never unpickles anything else: a file that needs arbitrary code to load is refused. Everything is
checked before the network is built, so a bad file costs no allocation: `hidden` is a positive int, the state
dict has exactly the policy's keys, each a float32 tensor of the shape `hidden` implies; then the content hash
(a bit flip anywhere in the weights, `hidden`, `format` or the metadata is caught), then that every weight is
finite.

The action space (chronos.actions) is recorded for every space but the seed's, as a top-level
`"action_space": {"name": "v2", "names": [...47 names in logit order...], "observation": {"version": "v2",
"features": [...52 feature names in input order...]}}` that the hash covers; a file without one is a
seed-space policy over the seed's 25 features (every file written before v2 existed, and every seed one
since, byte for byte as before). `load_model(path, action_space=...)` refuses a file of another space, whose
recorded names are not this chronos's names of that space, or whose observation (chronos.features.v2) is
not the one this chronos builds for that space: a policy is never read against other features. (v2 files
written before observation v2 record no observation; their policy read the seed's 25 features, so they are
refused: retrain them.)

Files without a hash (this project's "chronos-policy-v1" and the seed's bare {"policy": ...}) predate it:
there is nothing to check a bit flip against, so they are refused unless the caller passes
`require_hash=False` (a deliberate opt-in to read an old file: the same structural checks, no integrity).
Every load of the pipeline, the CLI and the shipped default insists. A v2 file without its hash is always
refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
from typing import Any

import torch

from chronos.actions import SEED, SPACES, ActionSpace, resolve_space
from chronos.errors import CheckpointError
from chronos.features.v2 import observation_version, observed_features
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


def _space_record(space: ActionSpace) -> dict | None:
    """What a checkpoint records of its action space: nothing for the seed's (see the module docstring)."""
    if space is SEED:
        return None
    return {"name": space.name, "names": list(space.names), "observation": _observation_record(space)}


def _observation_record(space: ActionSpace) -> dict:
    """The features a policy of `space` reads (chronos.features.v2), as a checkpoint records them."""
    return {"version": observation_version(space), "features": list(observed_features(space))}


def _check_observation(rec: dict, space: ActionSpace, p: str) -> None:
    """The recorded observation must be the one this chronos builds for `space`."""
    want, got = _observation_record(space), rec.get("observation")
    if got == want:
        return
    if not isinstance(got, dict):
        raise CheckpointError(f"{p}: its {space.name} policy records no observation (written before "
                              f"observation v2, it read other features than this chronos's "
                              f"{len(want['features'])}); retrain it with this chronos")
    feats = got.get("features") if isinstance(got.get("features"), list) else []
    i = next((i for i, (a, b) in enumerate(zip(feats, want["features"])) if a != b),
             min(len(feats), len(want["features"])))
    raise CheckpointError(f"{p}: its policy reads observation {got.get('version')!r} with {len(feats)} "
                          f"features, this chronos's {space.name} space observation {want['version']!r} has "
                          f"{len(want['features'])}; they first differ at feature {i}: the policy would read "
                          "other features than it was trained on, so it cannot be loaded")


def content_hash(fmt: str, hidden: int, state: dict[str, torch.Tensor], metadata: dict,
                 space: dict | None = None) -> str:
    """sha256 over format, hidden, the metadata (sorted-key JSON), the action-space record when there is one
    (so a seed file's hash is what it always was) and every tensor in sorted key order (name, dtype, shape and
    raw bytes, so that a renamed or reshaped tensor changes it too)."""
    h = hashlib.sha256()
    head = {"format": fmt, "hidden": hidden, "metadata": metadata}
    if space is not None:
        head["action_space"] = space
    h.update(json.dumps(head, sort_keys=True).encode())
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
    space = _space_record(policy.action_space)
    digest = content_hash(CHECKPOINT_FORMAT, hidden, state, metadata, space)
    ckpt = {"format": CHECKPOINT_FORMAT, "hidden": hidden, "policy": state, "metadata": metadata}
    if space is not None:
        ckpt["action_space"] = space
    torch.save({**ckpt, "sha256": digest}, os.fspath(path))
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


def _space(ckpt: dict, p: str, expected: ActionSpace | str | None) -> ActionSpace:
    """The recorded action space (none: the seed's), which must be this chronos's space of that name and,
    when `expected` is given, that one."""
    rec = ckpt.get("action_space")
    if rec is None:
        space = SEED
    else:
        if not isinstance(rec, dict) or rec.get("name") not in SPACES or rec.get("name") == "seed":
            raise CheckpointError(f"{p}: unknown action space record {rec!r}; expected one of "
                                  f"{', '.join(n for n in SPACES if n != 'seed')} (a seed file records none)")
        space = SPACES[rec["name"]]
        names = rec.get("names")
        if names != list(space.names):
            i = next((i for i, (a, b) in enumerate(zip(names or [], space.names)) if a != b),
                     min(len(names or []), space.size))
            raise CheckpointError(f"{p}: its {space.name} action space has {len(names or [])} names, this "
                                  f"chronos's has {space.size}; they first differ at logit {i}: the policy's "
                                  "outputs would mean other actions, so it cannot be loaded")
        _check_observation(rec, space, p)
    if expected is not None and resolve_space(expected) is not space:
        want = resolve_space(expected)
        raise CheckpointError(f"{p}: the policy was trained in the {space.name} action space ({space.size} "
                              f"actions) and cannot be loaded into the {want.name} space ({want.size}); set "
                              f"params.yaml `actions: {space.name}` or use a checkpoint trained with "
                              f"`actions: {want.name}`")
    return space


def _check_state(state: dict, hidden: int, p: str, space: ActionSpace = SEED) -> None:
    """Exactly the policy's keys, each float32 of the shape `hidden` and the space imply (checked before
    building)."""
    want = state_shapes(hidden, len(observed_features(space)), space.size)
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
        where = "" if space is SEED else f", action_space={space.name!r}"
        raise CheckpointError(f"{p}: weights do not fit TransformPolicy(hidden={hidden}{where}): "
                              f"{'; '.join(problems)}")


def _check_hash(ckpt: dict, hidden: int, metadata: dict, p: str, require_hash: bool) -> str | None:
    stored = ckpt.get("sha256")
    if stored is None:
        if ckpt.get("format") == CHECKPOINT_FORMAT or require_hash:
            raise CheckpointError(f"{p}: no content hash (format {ckpt.get('format')!r}), so it cannot be "
                                  "verified; regenerate it with the current chronos (dvc repro)")
        return None
    actual = content_hash(ckpt.get("format"), hidden, ckpt["policy"], metadata, ckpt.get("action_space"))
    if stored != actual:
        raise CheckpointError(f"{p}: content hash mismatch (stored {str(stored)[:16]}..., actual "
                              f"{actual[:16]}...): the file is corrupted or was edited")
    return actual


def load_model(path: str | os.PathLike, *, require_hash: bool = True,
               action_space: ActionSpace | str | None = None) -> TransformPolicy:
    """Load a checkpoint with `torch.load(weights_only=True)` only; the model comes back in eval mode.

    `action_space` (a name or an ActionSpace; None: whichever the file records) is the space the caller
    decodes in: a file of another space is refused, naming both.

    Attaches the checkpoint's metadata as `model.metadata` and its verified hash as `model.content_hash`
    (None for a legacy file without one). Raises CheckpointError naming the path and the problem: a missing
    or unreadable file, a pickle that needs arbitrary objects, a bad `hidden`, weights of the wrong keys,
    shapes or dtype, a content-hash mismatch, non-finite weights; unless `require_hash=False`, a file without
    a hash.
    """
    p = os.fspath(path)
    ckpt = _read(p)
    hidden = _hidden(ckpt, p)
    space = _space(ckpt, p, action_space)
    state = ckpt["policy"]
    _check_state(state, hidden, p, space)
    metadata = ckpt.get("metadata", {})
    if not isinstance(metadata, dict):
        raise CheckpointError(f"{p}: metadata is a {type(metadata).__name__}, not a dict")
    digest = _check_hash(ckpt, hidden, metadata, p, require_hash)
    bad = [k for k, v in state.items() if not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(f"{p}: non-finite weights (NaN or Inf) in {', '.join(sorted(bad))}")
    model = TransformPolicy(hidden=hidden, action_space=space)
    model.load_state_dict(state)
    model.eval()
    model.metadata = metadata
    model.content_hash = digest
    return model
