"""Row blocks of Inductor's FlexAttention templates (#28, action space v3): the block sizes a template folds
into its source (`BLOCK_M : tl.constexpr = 128`) rather than into its config, moved down by powers of two.

A row block is the number of rows one program owns: the forward's query rows (BLOCK_M), the backward's
key/value rows of dK/dV (BLOCK_N1) and query rows of dQ (BLOCK_M2). Each row's arithmetic — the walk over the
other sequence in steps of BLOCK_N / BLOCK_M1 / BLOCK_N2, the online softmax — does not depend on how many
rows share a program, so such a move is expected to keep stock's bits (verified on the GPU like every
variant); the inner blocks (BLOCK_N, BLOCK_M1, BLOCK_N2) set the reduction's order and are never moved.

Legality, from the source: a template is recognised only where its program-id arithmetic is one of the two
below (the grid's first axis then follows from the row blocks), a row block only moves down (a divisor of a
block that tiles the sequence still tiles it, and stays within the sparse block the template asserts), never
below MIN_ROWS (tl.dot's smallest tile).
"""

from __future__ import annotations

import re

MIN_ROWS = 16
WARPS = (4, 8)
"""num_warps tried with each move (the templates' own configs use these two)."""

_FORWARD = re.compile(r"^\s*offs_m = q_start \* BLOCK_M\b", re.MULTILINE)
_BACKWARD = (re.compile(r"^\s*NUM_KV_BLOCKS = tl\.cdiv\(KV_LEN, BLOCK_N1\)", re.MULTILINE),
             re.compile(r"^\s*NUM_Q_BLOCKS = tl\.cdiv\(Q_LEN, BLOCK_M2\)", re.MULTILINE))


def constexpr(source: str, key: str) -> int | None:
    """The literal value of `key : tl.constexpr = N` in the source (None where absent or not one int)."""
    found = re.findall(rf"^\s*{key}\s*:\s*tl\.constexpr\s*=\s*(\d+)\s*$", source, re.MULTILINE)
    return int(found[0]) if len(found) == 1 else None


def row_blocks(source: str) -> dict[str, int]:
    """The template's row blocks and their stock values ({} where the source is not a recognised template)."""
    if _FORWARD.search(source):
        keys = ("BLOCK_M",)
    elif all(p.search(source) for p in _BACKWARD):
        keys = ("BLOCK_N1", "BLOCK_M2")
    else:
        return {}
    found = {k: constexpr(source, k) for k in keys}
    return {k: v for k, v in found.items() if v is not None} if all(found.values()) else {}


def _length_term(source: str, name: str) -> str:
    """Q_LEN / KV_LEN as the kernel sets it: a literal, or the name of a size argument (`Q_LEN = ks0`)."""
    m = re.search(rf"^\s*{name} = (\w+)\s*$", source, re.MULTILINE)
    if m is None:
        raise ValueError(f"no `{name} = ...` line in the template")
    return m.group(1)


def _axis0_terms(source: str, blocks: dict[str, int]) -> list[tuple[str, int, int]]:
    """The grid's first axis as a sum of (length term, row block, multiplier): cdiv(length, block) * mult."""
    if "BLOCK_M" in blocks:
        return [(_length_term(source, "Q_LEN"), blocks["BLOCK_M"], 1)]
    shared = constexpr(source, "GQA_SHARED_HEADS") or 1
    return [(_length_term(source, "KV_LEN"), blocks["BLOCK_N1"], 1),
            (_length_term(source, "Q_LEN"), blocks["BLOCK_M2"], shared)]


def grid_axis0(source: str, blocks: dict[str, int], scope: dict) -> int:
    """The grid's first axis for these row blocks (`scope`: the launch's scalar arguments by name)."""
    total = 0
    for term, block, mult in _axis0_terms(source, blocks):
        if not term.isdigit() and term not in scope:
            raise ValueError(f"{term}: not a scalar argument of this launch")
        length = int(term) if term.isdigit() else int(scope[term])
        total += -(-length // block) * mult
    return total


def grid_axis0_expr(source: str, blocks: dict[str, int]) -> str:
    """The same as a Python expression over the launch's argument names: what Inductor's launcher evaluates
    for its grid (a FixedGrid template's `fixed_grid`), so a deployed row block launches on its own grid."""
    return " + ".join(f"-(({term}) // -{block})" + (f" * {mult}" if mult != 1 else "")
                      for term, block, mult in _axis0_terms(source, blocks))


def template_moves(source: str, num_warps: int) -> list[dict]:
    """Every move of one row block down by a power of two (to MIN_ROWS), each with the stock num_warps and
    the templates' other one: {label, blocks (all row blocks, one moved), num_warps}."""
    stock = row_blocks(source)
    out = []
    for key, old in stock.items():
        new = old // 2
        while new >= MIN_ROWS:
            for warps in dict.fromkeys((num_warps, *WARPS)):
                label = f"{key}={new}" if warps == num_warps else f"{key}={new},num_warps={warps}"
                out.append({"label": label, "blocks": {**stock, key: new}, "num_warps": warps})
            new //= 2
    return out


def edited(module_text: str, blocks: dict[str, int]) -> str:
    """The module's text with its row blocks set to `blocks`. Inductor declares a template's constants again
    at the top of each of its helper functions (`BLOCK_M : tl.constexpr = 128` in the kernel and in
    forward_inner...): every declaration is set, and all must hold one value, else ValueError (a template
    this does not understand is not edited)."""
    for key, value in blocks.items():
        pattern = re.compile(rf"^(\s*{key}\s*:\s*tl\.constexpr\s*=\s*)(\d+)\s*$", re.MULTILINE)
        olds = {m.group(2) for m in pattern.finditer(module_text)}
        if len(olds) != 1:
            raise ValueError(f"{key}: constexpr declarations with values {sorted(olds)}, expected one value")
        module_text = pattern.sub(lambda m, v=value: f"{m.group(1)}{v}", module_text)
    return module_text
