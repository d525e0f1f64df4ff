"""Block sizes of an Inductor kernel's config (#28, action space v3): XBLOCK, YBLOCK, R0_BLOCK... moved one
power of two up or down, with the kernel's num_warps kept or moved alike, within what its masks allow.

Unlike num_warps, a block size is a constexpr folded into the TTIR: a variant is compiled from Inductor's
generated module (scripts/make_block_variants.py), and it launches on another grid (Inductor's grid
expression evaluated for the new config). Legality, decided from the source before anything is compiled:

- a dimension whose mask compares the index with its numel (`xmask = xindex < xnumel`) takes any block;
- one without such a mask (Inductor drops it where the numel is a multiple of the block) only a smaller
  block, which still divides the numel;
- a persistent reduction's R0_BLOCK covers the whole reduction in one step: it is never moved.

Everything kept is then verified bit-exactly against stock on the GPU like every other variant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_BLOCK = {"X": 4096, "Y": 1024, "Z": 1024, "R0_": 4096, "R1_": 4096}
"""Inductor's own caps per dimension (TRITON_MAX_BLOCK)."""
MAX_ELEMENTS = 16384
"""Elements per program (the product of the blocks) above which a config only spills."""
MAX_WARPS = 32
FACTORS = (2, 0.5)


@dataclass(frozen=True)
class BlockMove:
    label: str
    """The action name in a comparison: "XBLOCK=2048" or "XBLOCK=2048,num_warps=8"."""
    kwargs: dict
    num_warps: int


def block_keys(kwargs: dict) -> list[str]:
    """The config's block-size constexprs (XBLOCK, YBLOCK, R0_BLOCK, ...), in the config's order."""
    return [k for k in kwargs if re.fullmatch(r"([XYZ]|R\d_)BLOCK", k)]


def _prefix(key: str) -> str:
    return key[: -len("BLOCK")]


def masked(source: str, key: str) -> bool:
    """Whether the kernel's source masks this block's dimension by its numel (XBLOCK: `xmask = xindex <
    xnumel`; R0_BLOCK: `r0_mask = r0_index < r0_numel`)."""
    p = _prefix(key).lower()
    return re.search(rf"^\s*{p}mask\s*=\s*{p}index\s*<\s*{p}numel\b", source, re.MULTILINE) is not None


def block_moves(kwargs: dict, num_warps: int, source: str, persistent: bool) -> list[BlockMove]:
    """Every legal one-step move of one block size, each with num_warps kept and with num_warps moved by the
    same factor (the same elements per thread), none that leaves the caps."""
    out, seen = [], set()
    for key in block_keys(kwargs):
        if persistent and key.startswith("R"):
            continue
        old = int(kwargs[key])
        for f in FACTORS:
            new = int(old * f)
            if new < 1 or new == old or new > MAX_BLOCK[_prefix(key)]:
                continue
            if f > 1 and not masked(source, key):
                continue
            moved = {**kwargs, key: new}
            elements = 1
            for k in block_keys(moved):
                elements *= int(moved[k])
            if elements > MAX_ELEMENTS:
                continue
            for warps in (num_warps, int(num_warps * f)):
                if warps < 1 or warps > MAX_WARPS or (key, new, warps) in seen:
                    continue
                seen.add((key, new, warps))
                label = f"{key}={new}" if warps == num_warps else f"{key}={new},num_warps={warps}"
                out.append(BlockMove(label, moved, warps))
    return out


def walk_moves(kwargs: dict, num_warps: int, source: str, persistent: bool) -> list[BlockMove]:
    """A local search's neighbours of a config (#28 item 4): every legal block move (block_moves), and
    num_warps alone one power of two up or down; Inductor's coordinate descent walks these same axes."""
    out = block_moves(kwargs, num_warps, source, persistent)
    for f in FACTORS:
        warps = int(num_warps * f)
        if 1 <= warps <= MAX_WARPS and warps != num_warps:
            out.append(BlockMove(f"num_warps={warps}", dict(kwargs), warps))
    return out
