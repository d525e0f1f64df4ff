"""The PTX test corpus: committed nvcc and Triton PTX, plus the 64 gemm_tile kernels for sm_90 and sm_89."""

from __future__ import annotations

import re
from pathlib import Path

from chronos.kernels.gemm_tile import GEMM_TILE_SHAPES, gemm_tile_ptx, kernel_name

CORPUS_DIR = Path(__file__).resolve().parents[1] / "corpus"
_TARGET = re.compile(r"^\.target\s+(sm_\w+)", re.MULTILINE)


def committed_files() -> list[Path]:
    return sorted(CORPUS_DIR.glob("**/*.ptx"))


def target_arch(text: str) -> str:
    m = _TARGET.search(text)
    assert m, "corpus file without .target"
    return m.group(1)


def corpus() -> list[tuple[str, str]]:
    """(id, text) for every corpus kernel: committed files and gemm_tile for both architectures."""
    out = [(p.relative_to(CORPUS_DIR).as_posix(), p.read_text()) for p in committed_files()]
    for target in ("sm_90", "sm_89"):
        out += [(f"{kernel_name(*s)}.{target}", gemm_tile_ptx(*s, target=target)) for s in GEMM_TILE_SHAPES]
    return out


def sample() -> list[tuple[str, str]]:
    """A few kernels of every family, for the slower property tests."""
    files = committed_files()
    picked = [p for p in files if any(k in p.name for k in ("reduction.sm_90", "softmax", "matmul", "tma"))]
    out = [(p.name, p.read_text()) for p in (picked or files)]
    out.append(("gemm_tile_4_6_4", gemm_tile_ptx(4, 6, 4)))
    return out
