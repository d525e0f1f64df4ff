"""How far a variant's outputs are from the baseline's when their bits differ (#28 item 2): ULP distance,
absolute and relative error, and whether a user's tolerance (rtol, atol) accepts them.

Strict verification (the default) stays bitwise (chronos.measure.inputs.bit_mismatches); this says by how
much a rejected variant missed, and decides the tolerance mode's acceptance. A NaN matches only a NaN, an
infinity only the same infinity, in every mode; -0.0 and +0.0 are 0 ULP apart here (bitwise they differ).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WITHIN_TOLERANCE = "within_tolerance"
"""The reason of a contender the tolerance mode accepted: valid, not bit-exact."""

FLOATS = {"f16": (np.int16, 15), "bf16": (np.int16, 15), "f32": (np.int32, 31), "f64": (np.int64, 63)}
"""Float dtype -> (signed int of its width, its sign bit)."""


def as_float64(a: np.ndarray, dtype: str) -> np.ndarray:
    """The values of an output buffer (bf16 buffers hold their bits as uint16) as float64."""
    if dtype == "bf16":
        return (np.ascontiguousarray(a).view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(
            np.float64)
    return np.asarray(a).astype(np.float64)


def ordered(a: np.ndarray, dtype: str) -> np.ndarray:
    """Each float's bits as an int64 that orders like the value (adjacent floats differ by 1; -0 == +0)."""
    signed, sign_bit = FLOATS[dtype]
    bits = np.ascontiguousarray(a).view(signed).astype(np.int64)
    magnitude = bits & ((1 << sign_bit) - 1)
    return np.where(bits < 0, -magnitude, magnitude)


def ulp_distance(ref: np.ndarray, got: np.ndarray, dtype: str) -> np.ndarray:
    """Per element, how many representable values lie between ref and got (ints: the difference itself);
    a NaN against a number, or infinities of another sign, count as the largest distance."""
    if dtype not in FLOATS:
        return np.abs(np.asarray(got).astype(np.int64) - np.asarray(ref).astype(np.int64))
    r, g = as_float64(ref, dtype), as_float64(got, dtype)
    d = np.abs(ordered(got, dtype) - ordered(ref, dtype))
    mismatch = (np.isnan(r) != np.isnan(g)) | ((np.isinf(r) | np.isinf(g)) & (r != g))
    d = np.where(np.isnan(r) & np.isnan(g), 0, d)
    return np.where(mismatch, np.iinfo(np.int64).max, d)


@dataclass(frozen=True)
class Tolerance:
    """Accept |got - ref| <= atol + rtol * |ref| element-wise (numpy.isclose's rule), NaN and inf matched."""

    rtol: float
    atol: float = 0.0

    def label(self) -> str:
        return f"rtol={self.rtol:g},atol={self.atol:g}"

    def accepts(self, ref: np.ndarray, got: np.ndarray, dtype: str) -> bool:
        r, g = as_float64(ref, dtype), as_float64(got, dtype)
        return bool(np.all(np.isclose(g, r, rtol=self.rtol, atol=self.atol, equal_nan=True)))


def difference(ref: np.ndarray, got: np.ndarray, dtype: str) -> dict:
    """{"elements": differing, "of": size, "max_ulp", "max_abs", "max_rel"} of one output (bytes compared;
    errors over the elements whose values are finite on both sides)."""
    rb = np.ascontiguousarray(ref).view(np.uint8).reshape(ref.size, -1)
    gb = np.ascontiguousarray(got).view(np.uint8).reshape(got.size, -1)
    differ = np.any(rb != gb, axis=1)
    out = {"elements": int(differ.sum()), "of": int(ref.size), "max_ulp": 0, "max_abs": 0.0, "max_rel": 0.0}
    if not out["elements"]:
        return out
    out["max_ulp"] = int(ulp_distance(ref[differ], got[differ], dtype).max())
    r, g = as_float64(ref[differ], dtype), as_float64(got[differ], dtype)
    finite = np.isfinite(r) & np.isfinite(g)
    if finite.any():
        err = np.abs(g[finite] - r[finite])
        out["max_abs"] = float(err.max())
        scale = np.abs(r[finite])
        out["max_rel"] = float(np.max(np.where(scale > 0, err / np.where(scale > 0, scale, 1), 0.0)))
    return out


def bit_exact(row: dict) -> bool:
    """Whether a verified contender's row kept every bit (valid, and not by the tolerance mode)."""
    return bool(row.get("valid")) and row.get("reason") != WITHIN_TOLERANCE
