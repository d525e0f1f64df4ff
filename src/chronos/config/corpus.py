"""The kernels the pipeline builds (`kernels:`) and the ones it never trains on (`split:`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from chronos.config.checks import check_gemm_tile


@dataclass(frozen=True)
class GemmTileConfig:
    """The seed's gemm_tile kernels, one per (m, n, k)."""

    m: tuple[int, ...] = (2, 4, 6, 8)
    n: tuple[int, ...] = (2, 4, 6, 8)
    k: tuple[int, ...] = (2, 4, 6, 8)
    target: str = "sm_90"
    ptx_version: str = "8.0"

    def __post_init__(self) -> None:
        check_gemm_tile(self.m, self.n, self.k, self.target, self.ptx_version)


@dataclass(frozen=True)
class KernelsConfig:
    gemm_tile: GemmTileConfig = field(default_factory=GemmTileConfig)


@dataclass(frozen=True)
class SplitConfig:
    """gemm_tile kernels never trained on (BC and GRPO), reported separately."""

    heldout_kernels: tuple[str, ...] = ()
