"""Block-size moves (#28, action space v3): one power of two up or down per block, num_warps kept or moved
alike, only where the kernel's masks keep every element covered exactly once."""

from __future__ import annotations

from chronos.triton.blocks import (
    MAX_BLOCK,
    MAX_ELEMENTS,
    MAX_WARPS,
    block_keys,
    block_moves,
    masked,
    walk_moves,
)

POINTWISE_MASKED = """
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
"""
POINTWISE_FULL = """
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)
"""
REDUCTION = """
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
"""


def labels(moves):
    return sorted(m.label for m in moves)


def test_a_masked_pointwise_block_moves_both_ways_with_and_without_its_warps():
    moves = block_moves({"XBLOCK": 1024}, 4, POINTWISE_MASKED, persistent=False)
    assert labels(moves) == ["XBLOCK=2048", "XBLOCK=2048,num_warps=8", "XBLOCK=512", "XBLOCK=512,num_warps=2"]
    assert {m.num_warps for m in moves if m.label == "XBLOCK=2048,num_warps=8"} == {8}


def test_an_unmasked_block_only_shrinks_which_still_divides_its_numel():
    assert not masked(POINTWISE_FULL, "XBLOCK")
    assert all(m.kwargs["XBLOCK"] == 512 for m in block_moves({"XBLOCK": 1024}, 4, POINTWISE_FULL, False))


def test_a_persistent_reduction_keeps_its_whole_row_block():
    moves = block_moves({"XBLOCK": 8, "R0_BLOCK": 128}, 4, REDUCTION, persistent=True)
    assert moves and all(m.kwargs["R0_BLOCK"] == 128 for m in moves)
    looped = block_moves({"XBLOCK": 8, "R0_BLOCK": 128}, 4, REDUCTION, persistent=False)
    assert {m.kwargs["R0_BLOCK"] for m in looped} == {64, 128, 256}


def test_moves_stay_within_inductor_s_caps_and_the_element_budget():
    at_cap = block_moves({"XBLOCK": MAX_BLOCK["X"]}, 32, POINTWISE_MASKED, False)
    assert labels(at_cap) == [f"XBLOCK={MAX_BLOCK['X'] // 2}", f"XBLOCK={MAX_BLOCK['X'] // 2},num_warps=16"]
    big = block_moves({"XBLOCK": 64, "R0_BLOCK": MAX_ELEMENTS // 64}, 8, REDUCTION, False)
    assert all(m.kwargs["XBLOCK"] * m.kwargs["R0_BLOCK"] <= MAX_ELEMENTS for m in big)
    one = block_moves({"XBLOCK": 1}, 1, POINTWISE_MASKED, False)
    assert labels(one) == ["XBLOCK=2", "XBLOCK=2,num_warps=2"]


def test_only_block_constexprs_are_moved():
    assert block_keys({"XBLOCK": 8, "R0_BLOCK": 64, "YBLOCK": 2, "RSPLIT": 4, "num_warps": 4}) == [
        "XBLOCK", "R0_BLOCK", "YBLOCK"]


def test_a_walk_also_moves_num_warps_alone_within_its_range():
    moves = walk_moves({"XBLOCK": 1024}, 4, POINTWISE_MASKED, persistent=False)
    alone = {m.label: m for m in moves if m.label.startswith("num_warps=")}
    assert set(alone) == {"num_warps=8", "num_warps=2"}
    assert all(m.kwargs == {"XBLOCK": 1024} for m in alone.values())
    assert labels(moves) == sorted([*labels(block_moves({"XBLOCK": 1024}, 4, POINTWISE_MASKED, False)),
                                    "num_warps=8", "num_warps=2"])
    edge = walk_moves({"XBLOCK": 1024}, 1, POINTWISE_MASKED, persistent=False)
    assert "num_warps=0" not in labels(edge) and "num_warps=2" in labels(edge)
    top = walk_moves({"XBLOCK": 1024}, MAX_WARPS, POINTWISE_MASKED, persistent=False)
    assert f"num_warps={2 * MAX_WARPS}" not in labels(top)
