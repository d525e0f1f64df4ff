"""Row blocks of FlexAttention's templates (#28): recognised from the committed sources of the captured flex
kernels, moved only down, the grid's first axis following the template's own program-id arithmetic, and
the module edited in exactly one place per block."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from chronos.triton.template_blocks import (
    constexpr,
    edited,
    grid_axis0,
    grid_axis0_expr,
    row_blocks,
    template_moves,
)

BLOCKS = Path(__file__).resolve().parents[2] / "data/kernels/captured/flex/blocks"
FORWARD = "triton_tem_fused_flex_attention_0_6ba384d8"
DECODE = "triton_tem_fused__to_copy_flex_attention_ones_slice_sort_sum_transpose_zeros_2_eb43a34d"
BACKWARD = "triton_tem_fused_flex_attention_backward_1_22f2040c"


def _source(stem: str) -> str:
    return gzip.decompress((BLOCKS / stem / "source.py.gz").read_bytes()).decode()


def test_the_forward_and_backward_templates_have_their_row_blocks_and_pointwise_kernels_none():
    assert row_blocks(_source(FORWARD)) == {"BLOCK_M": 128}
    assert row_blocks(_source(BACKWARD)) == {"BLOCK_N1": 128, "BLOCK_M2": 128}
    assert row_blocks(_source("triton_poi_fused_ones_0_55d7e014")) == {}
    assert constexpr(_source(FORWARD), "BLOCK_N") == 64  # the inner block: there, never moved


def test_the_rule_gives_the_captured_grids_for_the_stock_blocks():
    fwd, bwd, dec = _source(FORWARD), _source(BACKWARD), _source(DECODE)
    assert grid_axis0(fwd, {"BLOCK_M": 128}, {}) == 32  # captured [32, 1, 32]
    assert grid_axis0(bwd, {"BLOCK_N1": 128, "BLOCK_M2": 128}, {}) == 64  # captured [64, 1, 32]
    assert grid_axis0(dec, {"BLOCK_M": 128}, {"ks0": 8}) == 1  # Q_LEN = ks0; captured [1, 8, 32]
    assert grid_axis0(fwd, {"BLOCK_M": 32}, {}) == 128
    assert grid_axis0(bwd, {"BLOCK_N1": 64, "BLOCK_M2": 128}, {}) == 96
    with pytest.raises(ValueError, match="ks0"):
        grid_axis0(dec, {"BLOCK_M": 64}, {})


def test_moves_go_down_to_sixteen_rows_one_block_at_a_time_with_both_warp_counts():
    moves = template_moves(_source(BACKWARD), 8)
    labels = [m["label"] for m in moves]
    assert labels[:2] == ["BLOCK_N1=64", "BLOCK_N1=64,num_warps=4"] and len(moves) == 12
    assert {"BLOCK_N1": 128, "BLOCK_M2": 16} in [m["blocks"] for m in moves]
    assert all(min(m["blocks"].values()) >= 16 and max(m["blocks"].values()) <= 128 for m in moves)
    assert all(sum(v != 128 for v in m["blocks"].values()) == 1 for m in moves)
    assert [m["label"] for m in template_moves(_source(FORWARD), 4)][:2] == ["BLOCK_M=64",
                                                                            "BLOCK_M=64,num_warps=8"]


def test_the_edit_sets_every_declaration_of_a_row_block_and_refuses_ones_that_disagree():
    src = _source(FORWARD)
    helper = ("\n\n@triton.jit\ndef forward_inner(q):\n"
              "    BLOCK_M : tl.constexpr = 128\n    BLOCK_N : tl.constexpr = 64\n")
    out = edited(src + helper, {"BLOCK_M": 32})
    assert out.count("BLOCK_M : tl.constexpr = 32") == 2 and "BLOCK_M : tl.constexpr = 128" not in out
    assert out.count("BLOCK_N : tl.constexpr = 64") == 2
    assert sum(a != b for a, b in zip((src + helper).splitlines(), out.splitlines(), strict=True)) == 2
    with pytest.raises(ValueError, match=r"BLOCK_M: constexpr declarations with values \['128', '64'\]"):
        edited(src + helper.replace("= 128", "= 64"), {"BLOCK_M": 32})
    with pytest.raises(ValueError, match=r"BLOCK_N1: .* values \[\]"):
        edited(src, {"BLOCK_N1": 32})


def test_the_launcher_expression_evaluates_to_the_rule():
    """What a deployed row block's launcher computes for its grid equals the rule, for every launch."""
    cases = [(_source(FORWARD), {"BLOCK_M": 64}, {}), (_source(DECODE), {"BLOCK_M": 64}, {"ks0": 8}),
             (_source(DECODE), {"BLOCK_M": 64}, {"ks0": 129}),
             (_source(BACKWARD), {"BLOCK_N1": 64, "BLOCK_M2": 32}, {})]
    for src, blocks, scope in cases:
        expr = grid_axis0_expr(src, blocks)
        assert eval(expr, {"__builtins__": {}}, dict(scope)) == grid_axis0(src, blocks, scope), expr
    assert grid_axis0_expr(_source(DECODE), {"BLOCK_M": 64}) == "-((ks0) // -64)"
