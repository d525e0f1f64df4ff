"""Block sizes of a hand-written Triton kernel from its source (#28 on a stranger's code): the captured launch
is rebuilt (arguments Triton specialised away: a None pointer, a unit stride) until the stock PTX is remade;
block moves compile; the grid follows ceil(n / block)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

from chronos.triton.jit_source import (
    _alignments,
    block_dims,
    block_moves,
    compile_jit,
    grid_after,
    load_jit,
    remake_stock,
)
from chronos.triton.tuned_db import ptx_identity_sha256

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MODULE = HERE / "jit_modules" / "scaled_add.py"
N = 1 << 20


def _spec(grid):
    """What a capture records of `scaled_add_kernel[grid](x, y, None, out, N, 1, 2.0, HAS_BIAS=False,
    BLOCK_SIZE=1024)`: the PTX keeps x, y, out, size and scale (bias is None, the stride is 1)."""
    buf = {"kind": "buffer", "dtype": "f32", "elements": N}
    args = [{**buf, "name": "p0"}, {**buf, "name": "p1"}, {**buf, "name": "p2"},
            {"kind": "scalar", "dtype": "i32", "value": N, "name": "p3"},
            {"kind": "scalar", "dtype": "f32", "value": 2.0, "name": "p4"},
            {"kind": "null", "dtype": "u64", "name": "p5"}, {"kind": "null", "dtype": "u64", "name": "p6"}]
    return {"kernel": "k", "args": args, "grid": grid, "alignment": {"p0": 16, "p1": 16, "p2": 16}}


def test_the_launch_is_rebuilt_until_the_stock_ptx_is_remade_and_its_block_moves_compile():
    fn = load_jit(MODULE, "scaled_add_kernel")
    sig = {"x_pointer": "*fp32", "y_pointer": "*fp32", "bias_pointer": "constexpr", "out_pointer": "*fp32",
           "size": "i32", "x_stride": "constexpr", "scale": "fp32", "HAS_BIAS": "constexpr",
           "BLOCK_SIZE": "constexpr"}
    consts = {"bias_pointer": None, "x_stride": 1, "HAS_BIAS": False, "BLOCK_SIZE": 1024}
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 3, 4)}
    stock = compile_jit(fn, sig, consts, attrs, {"num_warps": 4})[0]  # what the capture's launch compiled
    spec = _spec([N // 1024, 1, 1])
    found = remake_stock(fn, spec, {"HAS_BIAS": False, "BLOCK_SIZE": 1024}, {"num_warps": 4},
                         ptx_identity_sha256(stock))
    assert found is not None and found[1]["bias_pointer"] is None and found[1]["x_stride"] == 1
    moves = {m["label"]: m for m in block_moves({"HAS_BIAS": False, "BLOCK_SIZE": 1024}, 4)}
    assert set(moves) == {"BLOCK_SIZE=2048", "BLOCK_SIZE=2048,num_warps=8", "BLOCK_SIZE=512",
                          "BLOCK_SIZE=512,num_warps=2"}
    ptx = compile_jit(fn, found[0], {**found[1], "BLOCK_SIZE": 2048}, found[2], {"num_warps": 8})[0]
    assert ".reqntid 256" in ptx and ptx_identity_sha256(ptx) != ptx_identity_sha256(stock)
    assert grid_after(spec, "BLOCK_SIZE", 1024, 2048) == [N // 2048, 1, 1]


def test_alignments_put_pointers_on_buffers_and_let_unit_strides_and_none_pointers_go():
    kept = [{"kind": "buffer"}, {"kind": "scalar"}]
    names = ["x_ptr", "bias_ptr", "n", "stride"]
    got = [[(n, a is not None) for n, a in m] for m in _alignments(names, kept)]
    assert [("x_ptr", True), ("bias_ptr", False), ("n", True), ("stride", False)] in got
    assert all(dict(m)["x_ptr"] or dict(m)["bias_ptr"] for m in got)  # a buffer is never an int's place


def test_an_alias_argument_is_a_pointer_too():
    kept = [{"kind": "buffer"}, {"kind": "alias"}, {"kind": "scalar"}]  # attorch: the input again as bias
    got = [dict(m) for m in _alignments(["x_ptr", "bias_ptr", "n"], kept)]
    assert got == [{"x_ptr": kept[0], "bias_ptr": kept[1], "n": kept[2]}]


def test_a_grid_that_does_not_follow_the_block_gives_no_move():
    spec = _spec([7, 1, 1])
    assert grid_after(spec, "BLOCK_SIZE", 1024, 2048) is None


def test_a_matmul_grid_over_rows_times_columns_follows_each_of_its_two_blocks():
    # attorch's linear, 4096 x 2048 -> 2048: grid (cdiv(batch_dim, 128) * cdiv(out_feat_dim, 128),)
    signature = {"x_pointer": "*fp16", "batch_dim": "i32", "in_feat_dim": "i32", "out_feat_dim": "i32",
                 "x_stride": "i32", "one_stride": "constexpr", "BLOCK_SIZE_BATCH": "constexpr"}
    spec = {"args": [{"kind": "buffer"}, *({"kind": "scalar", "value": v} for v in (4096, 2048, 2048, 2048)),
                     {"kind": "null"}], "grid": [512, 1, 1]}
    blocks = {"BLOCK_SIZE_BATCH": 128, "BLOCK_SIZE_IN_FEAT": 32, "BLOCK_SIZE_OUT_FEAT": 128, "fp16": True}
    dims = block_dims(signature, spec, blocks)
    assert dims == {"BLOCK_SIZE_BATCH": (4096, 128), "BLOCK_SIZE_IN_FEAT": (2048, 32),
                    "BLOCK_SIZE_OUT_FEAT": (2048, 128)}
    assert grid_after(spec, "BLOCK_SIZE_BATCH", 128, 256, dims) == [16 * 16, 1, 1]
    assert grid_after(spec, "BLOCK_SIZE_OUT_FEAT", 128, 64, dims) == [32 * 32, 1, 1]
    assert grid_after(spec, "BLOCK_SIZE_IN_FEAT", 32, 64, dims) == [512, 1, 1]  # the reduction's: kept
    assert grid_after(spec, "BLOCK_SIZE_BATCH", 128, 256) is None  # by values alone: no rule fits
    # at 4096 x 2048 -> 11264 with IN_FEAT 64, cdiv(2048, 64) = cdiv(4096, 128): two products explain it
    wide = {**spec, "grid": [1408, 1, 1]}
    two_ways = {"BLOCK_SIZE_BATCH": (4096, 128), "BLOCK_SIZE_IN_FEAT": (2048, 64),
                "BLOCK_SIZE_OUT_FEAT": (11264, 256)}
    assert grid_after(wide, "BLOCK_SIZE_BATCH", 128, 256, two_ways) is None


def test_the_committed_attorch_variants_were_built_from_its_vendored_source():
    lib = ROOT / "data" / "library" / "attorch"
    manifest = json.loads((lib / "blocks.json").read_text())
    remade = [e for e in manifest["kernels"].values() if e.get("remade_stock")]
    assert len(remade) >= 28 and all(Path(ROOT / e["source"]).is_file() for e in remade)
    if triton.__version__ != manifest["provenance"]["triton"]:
        pytest.skip(f"the stock PTX is remade only under Triton {manifest['provenance']['triton']}")
    e = next(e for e in remade if e["stem"].startswith("act_func_forward"))
    fn = load_jit(ROOT / e["source"], "act_func_forward_kernel", "attorch")
    specs = [s for s in json.loads((lib / "specs.json").read_text())
             if s["ptx"].split("/")[-1].startswith(e["stem"])]
    from chronos.kernels.spec import read_ptx_file

    ident = ptx_identity_sha256(read_ptx_file(lib / specs[0]["ptx"]))
    opts = {k: v for k, v in e["stock_config"].items() if k != "kwargs"}
    assert remake_stock(fn, specs[0], e["stock_config"]["kwargs"], opts, ident) is not None
