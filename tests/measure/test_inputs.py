"""Input draws are deterministic and fresh per draw; poison and bit-exact comparison are on bytes."""

from __future__ import annotations

import numpy as np

from chronos.kernels.gemm_tile import gemm_tile_spec
from chronos.kernels.spec import ArgSpec, KernelSpec
from chronos.measure.inputs import (
    bit_mismatches,
    draw_inputs,
    init_buffer,
    poison,
    stats,
    unwritten,
    unwritten_error,
)


def test_draws_deterministic_and_fresh():
    spec = gemm_tile_spec(2, 2, 2)
    a, b = draw_inputs(spec, 0, 0), draw_inputs(spec, 0, 0)
    assert a.keys() == {spec.args[0].name, spec.args[1].name}
    assert all(np.array_equal(a[k], b[k]) for k in a)
    c = draw_inputs(spec, 0, 1)
    assert not np.array_equal(a[spec.args[0].name], c[spec.args[0].name])
    assert not np.array_equal(a[spec.args[0].name], draw_inputs(spec, 1, 0)[spec.args[0].name])
    x = a[spec.args[0].name]
    assert x.dtype == np.float32 and x.min() >= -1 and x.max() <= 1 and np.count_nonzero(x) == x.size


def test_init_kinds_and_dtypes():
    rng = np.random.default_rng(0)
    assert init_buffer(ArgSpec("a", "buffer", "i32", 10, init="randint(0,5)"), rng).max() < 5
    assert init_buffer(ArgSpec("a", "buffer", "f16", 10, init="normal(0,1)"), rng).dtype == np.float16
    bf = init_buffer(ArgSpec("a", "buffer", "bf16", 4, init="arange"), rng)
    assert bf.dtype == np.uint16 and bf.tolist() == [0, 0x3F80, 0x4000, 0x4040]  # 0, 1, 2, 3 in bf16


def test_poison_and_unwritten():
    arg = ArgSpec("c", "buffer", "f32", 8, role="output")
    p = poison(arg)
    assert np.isnan(p).all() and p.view(np.uint32)[0] == 0xFFFFFFFF
    assert unwritten(arg, p) == 8
    p[:5] = 1.0
    assert unwritten(arg, p) == 3


def test_a_partly_written_output_is_refused_except_for_a_captured_kernel():
    """A captured kernel may write a strided view of its output's span (Inductor's layer norms on the
    H200): its holes stay poison in every run and the bitwise comparison covers them; an output left
    entirely unwritten, or any hole in one of Chronos's own kernels, is a wrong spec."""
    out, inp = ArgSpec("c", "buffer", "f32", 8, role="output"), ArgSpec("a", "buffer", "f32", 8)
    spec = KernelSpec(kernel="k", family="triton", entry="k", ptx="k.ptx", grid=(1, 1, 1), block=(8, 1, 1),
                      args=(inp, out))
    part, none = poison(out), poison(out)
    part[:5] = 1.0
    assert unwritten_error(spec, {"c": part}) == "baseline left poison in outputs (elements): {'c': 3}"
    captured = KernelSpec(**{**spec.__dict__, "family": "captured"})
    assert unwritten_error(captured, {"c": part}) is None
    assert "{'c': 8}" in unwritten_error(captured, {"c": none})
    assert unwritten_error(spec, {"c": np.ones(8, np.float32)}) is None


def test_bit_exact_comparison():
    r = {"c": np.array([1.0, -0.0, np.nan], dtype=np.float32)}
    assert bit_mismatches(r, {"c": r["c"].copy()}) == {}  # NaN equals NaN bitwise
    assert bit_mismatches(r, {"c": np.array([1.0, 0.0, np.nan], dtype=np.float32)}) == {"c": 1}  # -0 != +0
    tiny = np.nextafter(np.float32(1.0), np.float32(2.0))
    assert bit_mismatches(r, {"c": np.array([tiny, -0.0, np.nan], dtype=np.float32)}) == {"c": 1}
    assert bit_mismatches(r, {}) == {"c": -1}


def test_stats():
    s = stats([1, 2, 3, 4, 100])
    assert s["median"] == 3 and s["iqr"] == 2 and s["n"] == 5
