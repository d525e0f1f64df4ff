"""What the stages that measure (or replay) share: their backend arguments and how the backend is opened.
Apart from stages/common.py so that the stages that never measure do not import the measurement stack."""

from __future__ import annotations

import argparse
from pathlib import Path

from chronos import config as chronos_config
from chronos.search.atlas_replay import backend_with_atlas


def add_backend_arguments(ap: argparse.ArgumentParser, retry_invalid: bool = False) -> None:
    """--store and --backend (overrides measure.backend), for stages that measure or replay."""
    ap.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"))
    ap.add_argument("--backend", choices=("gpu", "replay", "auto"), help="overrides measure.backend")
    if retry_invalid:
        ap.add_argument("--retry-invalid", action="store_true",
                        help="re-measure variants whose stored record is invalid "
                             "(gpu backend; newest record wins)")


def open_backend(args: argparse.Namespace, cfg: chronos_config.Config):
    """The measurement backend of a stage: --backend or measure.backend, over --store and the atlas beside
    it; --retry-invalid where the stage offers it."""
    extra = {"retry_invalid": True} if getattr(args, "retry_invalid", False) else {}
    return backend_with_atlas(args.backend or cfg.measure.backend, args.store, cfg.measure, **extra)
