"""GPU test (skipped without a CUDA GPU and pycuda): a compile-knob variant with another num_warps runs with
its own block and is verified bit-exactly beside stock; launched with the spec's block it could not run."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.config import MeasureConfig, TimingConfig
from chronos.kernels.spec import load_specs
from chronos.measure.backend import GpuBackend
from chronos.search.knob_census import knob_variants

pytestmark = pytest.mark.gpu
FLEX = Path(__file__).resolve().parents[2] / "data" / "kernels" / "captured" / "flex"


def test_a_num_warps_variant_runs_with_its_own_block(tmp_path, ptxas):
    spec = next(s for s in load_specs(FLEX / "specs.json") if s.kernel.startswith("triton_poi_fused_zeros"))
    variants, _ = knob_variants(FLEX, spec)
    wide = next(v for v in variants if v.actions == ("num_warps=4",))
    assert wide.launch.block == (128, 1, 1) != spec.block
    timing = TimingConfig(rounds=5, resamples=200, max_rounds=0)
    with GpuBackend(tmp_path / "m.sqlite", MeasureConfig(watchdog_s=30), ptxas=str(ptxas)) as be:
        cmp = be.compare(spec, [variants[0], wide], timing)
    assert cmp.baseline.valid and cmp.contenders[1].valid, cmp.contenders[1].log
