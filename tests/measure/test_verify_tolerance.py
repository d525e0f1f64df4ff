"""Verification says by how much a variant missed (#28 item 2), and the tolerance mode accepts a variant
within rtol/atol on every draw as valid but not bit-exact; strict stays bitwise and keeps its store keys."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from chronos.config import MeasureConfig
from chronos.errors import ConfigError
from chronos.kernels.gemm_tile import gemm_tile_spec
from chronos.measure.verify_device import verify_all

SPEC = gemm_tile_spec(2, 2, 2)
OUT = SPEC.outputs[0]


class _Draws:
    """A stand-in for DeviceDraws: the baseline writes ones; contender k writes ones plus its offsets."""

    def __init__(self, offsets: list[float]):
        self.offsets, self.refs, self.last = offsets, {}, {}

    def reference(self, base_k, bufs, args, d):
        self.refs[d] = {"host": {OUT.name: np.ones(OUT.elements, dtype=np.float32)}}

    def mismatches(self, k, bufs, args, d):
        got = np.ones(OUT.elements, dtype=np.float32)
        got[0] += np.float32(self.offsets[k])
        if got[0] == 1.0:
            return {}
        self.last = {OUT.name: got}
        return {OUT.name: 1}


def _verify(tolerance: str, offsets: list[float]) -> list[dict]:
    mcfg = replace(MeasureConfig(), tolerance=tolerance)
    return verify_all(SPEC, mcfg, _Draws(offsets), None, list(range(len(offsets))), {}, [])


def test_strict_rejects_any_changed_bit_and_says_by_how_much():
    exact, off = _verify("strict", [0.0, 1e-6])
    assert exact == {"valid": True, "reason": "", "log": ""}
    assert not off["valid"] and off["reason"] == "wrong_output"
    assert off["log"].startswith("outputs differ bitwise from the baseline on draw 0")
    assert '"max_ulp": 8' in off["log"] and '"elements": 1' in off["log"]


def test_the_tolerance_mode_accepts_within_it_and_marks_it_not_bit_exact():
    near, far = _verify("rtol=1e-5", [1e-6, 1e-3])
    assert near["valid"] and near["reason"] == "within_tolerance" and "rtol=1e-05,atol=0" in near["log"]
    assert not far["valid"] and far["reason"] == "wrong_output"


def test_only_a_strict_tolerance_keeps_the_store_keys_of_old_measurements():
    strict = MeasureConfig()
    assert "tolerance" not in strict.measured()
    assert replace(strict, tolerance="rtol=1e-5").config_hash() != strict.config_hash()
    for bad in ("rtol=-1", "tol=1", "rtol=0,atol=0", "rtol=x"):
        with pytest.raises(ConfigError, match="measure.tolerance"):
            replace(strict, tolerance=bad)
