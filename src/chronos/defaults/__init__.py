"""The policy and parameters a command uses when none is given, shipped inside the package so that an
installed `chronos` works from any directory: copies of the repository's `models/checkpoint_best.pt` (the
pipeline's policy) and `params.yaml`. tests/defaults/test_defaults.py fails when a copy differs from the
repository's file: after retraining or editing params.yaml, copy them here again.

    from chronos.defaults import params_path, policy_path
"""

from __future__ import annotations

import atexit
import contextlib
from importlib import resources
from pathlib import Path

POLICY = "checkpoint_best.pt"
PARAMS = "params.yaml"

_extracted = contextlib.ExitStack()  # files extracted from a zipped install, removed at exit
atexit.register(_extracted.close)


def _file(name: str) -> Path:
    """A real file for package resource `name`: where it lies, or (a zipped install) a temporary copy."""
    res = resources.files(__package__).joinpath(name)
    if isinstance(res, Path):
        return res
    return _extracted.enter_context(resources.as_file(res))


def policy_path() -> Path:
    """The default policy checkpoint (load it with chronos.rl.checkpoint.load_model)."""
    return _file(POLICY)


def params_path() -> Path:
    """The default params.yaml (load it with chronos.config.load)."""
    return _file(PARAMS)
