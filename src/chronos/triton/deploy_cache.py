"""Where deployed binaries are cached: Triton's cache folder, moved under `chronos-<digest>` while a tuned DB
is enabled. Triton 3.6 leaves the stage hook out of its cache key, so a folder of its own per DB content,
GPU and driver is what keeps a cache hit from bypassing the tuned key (ptxas is in Triton's own hash)."""

from __future__ import annotations

import os
import re
from pathlib import Path

_CACHE_ENV = "TRITON_CACHE_DIR"
_CHRONOS_LEAF = re.compile(r"chronos-[0-9a-f]{16}")
_UNSET = object()


def machine() -> str:
    """The GPUs and driver of this machine as /proc tells them, without initialising CUDA (enable() runs
    in every process of `chronos run`, before any fork a program may do)."""
    parts = []
    for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        try:
            parts += [line for line in info.read_text().splitlines() if line.startswith("Model:")]
        except OSError:
            continue
    from chronos.measure.runner import driver_version

    return ";".join([*parts, driver_version()])


def cache_digest(content: str, gpu: str | None, driver: str | None) -> str:
    """What names Chronos's cache folder: the DB content and the machine (or the GPU and driver enable() was
    told). A process on another GPU or driver gets another folder, so a tuned binary cached under one key
    never loads under another without the hook checking that key."""
    from chronos.kernels.variant import sha256_text

    here = machine() if gpu is None or driver is None else ""
    return sha256_text("\n".join([content, gpu or "", driver or "", here]))


def isolate_cache(knobs, digest: str) -> tuple[str, tuple]:
    """Point Triton's cache at `<base>/chronos-<digest[:16]>`; returns the new dir and what to restore.
    A base that is already such a dir (inherited through TRITON_CACHE_DIR from a parent process that
    enabled Chronos) is replaced, not nested."""
    saved = (knobs.cache.__dict__.get("dir", _UNSET), os.environ.get(_CACHE_ENV))
    base = os.path.normpath(knobs.cache.dir)
    if _CHRONOS_LEAF.fullmatch(os.path.basename(base)):
        base = os.path.dirname(base)
    knobs.cache.dir = os.path.join(base, f"chronos-{digest[:16]}")
    return knobs.cache.dir, saved


def restore_cache(knobs, saved: tuple) -> None:
    value, env = saved
    if value is _UNSET:
        del knobs.cache.dir
    else:
        knobs.cache.dir = value
    if env is None:
        os.environ.pop(_CACHE_ENV, None)
    else:
        os.environ[_CACHE_ENV] = env
