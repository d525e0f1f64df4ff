"""ULP distances and tolerances (#28 item 2): adjacent floats are 1 ULP apart in every float width, signed
zeros 0, a NaN matches only a NaN; the tolerance accepts what numpy.isclose does, never a moved NaN."""

from __future__ import annotations

import numpy as np

from chronos.measure.inputs import _to_bf16
from chronos.measure.numerics import Tolerance, difference, ulp_distance


def test_adjacent_values_are_one_ulp_apart_in_every_float_width():
    for dtype, np_type in (("f16", np.float16), ("f32", np.float32), ("f64", np.float64)):
        x = np.array([1.0, -2.5, 1e-3, 0.0], dtype=np_type)
        up = np.nextafter(x, np.array(np.inf, dtype=np_type))
        assert list(ulp_distance(x, up, dtype)) == [1, 1, 1, 1], dtype
        assert list(ulp_distance(up, x, dtype)) == [1, 1, 1, 1], dtype
    x = _to_bf16(np.array([1.0, -3.0], dtype=np.float32))
    assert list(ulp_distance(x, x + np.uint16(1), "bf16")) == [1, 1]  # bf16 buffers hold their bits


def test_signed_zeros_nans_and_infinities():
    a = np.array([0.0, np.nan, np.nan, np.inf, np.inf, 1.0], dtype=np.float32)
    b = np.array([-0.0, np.nan, 1.0, np.inf, -np.inf, -1.0], dtype=np.float32)
    d = ulp_distance(a, b, "f32")
    big = np.iinfo(np.int64).max
    assert d[0] == 0 and d[1] == 0 and d[2] == big and d[3] == 0 and d[4] == big
    assert d[5] == 2 * 0x3F800000  # across zero: both sides' distances from it


def test_a_tolerance_accepts_what_isclose_does_and_never_a_moved_nan():
    ref = np.array([1.0, 100.0, np.nan], dtype=np.float32)
    near = np.array([1.0 + 1e-6, 100.0 + 1e-4, np.nan], dtype=np.float32)
    assert Tolerance(1e-5).accepts(ref, near, "f32") and not Tolerance(1e-8).accepts(ref, near, "f32")
    assert not Tolerance(1.0, 1.0).accepts(ref, np.array([1.0, 100.0, 0.0], dtype=np.float32), "f32")
    assert Tolerance(1e-3, 1e-6).label() == "rtol=0.001,atol=1e-06"


def test_the_difference_report_counts_elements_and_their_worst_errors():
    ref = np.ones(8, dtype=np.float32)
    got = ref.copy()
    got[3] = np.nextafter(np.float32(1.0), np.float32(2.0))
    got[5] = 1.5
    rep = difference(ref, got, "f32")
    assert rep["elements"] == 2 and rep["of"] == 8 and rep["max_ulp"] == 1 << 22
    assert rep["max_abs"] == 0.5 and rep["max_rel"] == 0.5
    assert difference(ref, ref.copy(), "f32")["elements"] == 0
    ints = difference(np.array([1, 2], dtype=np.int32), np.array([1, 5], dtype=np.int32), "i32")
    assert ints["max_ulp"] == 3
