"""Checks of params.yaml values that a type cannot express, each failing with the dotted key: tile sizes a
kernel can have, a target and PTX version ptxas knows, held-out names that name a kernel of the corpus.
Without them a typo ran out of memory, wrote 64 kernels ptxas rejects, or trained with no held-out set."""

from __future__ import annotations

import re

from chronos.errors import ConfigError


def check(ok: bool, key: str, why: str) -> None:
    """A ConfigError naming the dotted key unless `ok` (every block of chronos.config checks with it)."""
    if not ok:
        raise ConfigError(f"{key}: {why}")


MAX_TILE = 16
"""Largest gemm_tile dimension: an m x n x k per-thread tile lives in registers (the seed's go to 8)."""
_TARGET = re.compile(r"sm_(\d{2,3})a?")
_PTX_VERSION = re.compile(r"\d{1,2}\.\d{1,2}")


def check_gemm_tile(m, n, k, target: str, ptx_version: str) -> None:
    for name, values in (("m", m), ("n", n), ("k", k)):
        check(bool(values) and all(0 < v <= MAX_TILE for v in values), f"kernels.gemm_tile.{name}",
              f"must be a non-empty list of ints in 1..{MAX_TILE}, got {list(values)}")
    match = _TARGET.fullmatch(target)
    check(bool(match) and 50 <= int(match.group(1)) <= 130, "kernels.gemm_tile.target",
          f"not an sm_XX target ptxas knows (sm_50 .. sm_130): {target!r}")
    check(bool(_PTX_VERSION.fullmatch(ptx_version)), "kernels.gemm_tile.ptx_version",
          f"not a PTX ISA version like 8.0: {ptx_version!r}")


def check_heldout(heldout, m, n, k) -> None:
    """Every held-out name is a kernel of the corpus (`gemm_tile(m,n,k)` over kernels.gemm_tile)."""
    kernels = {f"gemm_tile({a},{b},{c})" for a in m for b in n for c in k}
    unknown = [h for h in heldout if h not in kernels]
    check(not unknown, "split.heldout_kernels",
          f"{unknown[:3]} name no kernel of the corpus (names look like 'gemm_tile(2,4,6)')")
