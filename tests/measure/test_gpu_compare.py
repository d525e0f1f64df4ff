"""GPU tests of the side-by-side path (skipped without a CUDA GPU and pycuda): verification on the device,
graph and event series, copies of the baseline judged alike, a faulting contender isolated."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.config import MeasureConfig, TimingConfig
from chronos.kernels.spec import load_specs, ptx_path
from chronos.kernels.variant import Variant
from chronos.measure.backend import GpuBackend

pytestmark = pytest.mark.gpu
TRITON = Path(__file__).resolve().parents[2] / "data" / "kernels" / "triton" / "specs.json"
CFG = MeasureConfig(watchdog_s=30.0)
TIMING = TimingConfig(rounds=6, resamples=500)


def _kernel(name: str):
    spec = next(s for s in load_specs(TRITON) if s.kernel == name)
    return spec, ptx_path(TRITON, spec).read_text()


def test_copies_agree_a_wrong_variant_is_caught_and_short_kernels_use_graphs(tmp_path):
    spec, ptx = _kernel("silu_mul_f16_n4096")
    assert "0f3FB8AA3B" in ptx  # log2(e) of silu's exp: one ulp off changes some outputs
    wrong = ptx.replace("0f3FB8AA3B", "0f3FB8AA3C", 1)
    vs = [Variant(spec, ptx, ()), Variant(spec, ptx, ()), Variant(spec, wrong, ("inject_wrong",))]
    with GpuBackend(tmp_path / "m.sqlite", CFG) as be:
        cmp = be.compare(spec, vs, TIMING)
    assert [c.valid for c in cmp.contenders] == [True, True, False]
    assert cmp.contenders[2].reason == "wrong_output"
    n = len(cmp.contenders[0].graph_ms)  # adaptive rounds: TIMING.rounds, then steps up to max_rounds
    assert cmp.primary == "graph" and len(cmp.contenders[1].graph_ms) == n
    assert TIMING.rounds <= n <= TIMING.max_rounds
    assert cmp.verdict(1, TIMING, 0.005) == "no_difference"
    assert 0 < cmp.time_ms(0)[0] < cmp.probe_ms  # per launch in a graph < one launch between events


def test_a_long_kernel_is_judged_on_single_launch_events(tmp_path):
    spec, ptx = _kernel("attention_d64_kv1024")
    with GpuBackend(tmp_path / "m.sqlite", CFG) as be:
        cmp = be.compare(spec, [Variant(spec, ptx, ()), Variant(spec, ptx, ())], TIMING)
    assert cmp.primary == "event" and cmp.contenders[1].graph_ms is None
    assert cmp.verdict(1, TIMING, 0.005) == "no_difference"


def test_the_l2_demote_protocol_runs_on_both_series_and_keys_its_own_comparisons(tmp_path):
    import dataclasses

    demote = dataclasses.replace(TIMING, l2_demote=True)
    for name, primary in (("silu_mul_f16_n4096", "graph"), ("attention_d64_kv1024", "event")):
        spec, ptx = _kernel(name)
        vs = [Variant(spec, ptx, ()), Variant(spec, ptx, ())]
        with GpuBackend(tmp_path / "m.sqlite", CFG) as be:
            plain, demoted = be.compare(spec, vs, TIMING), be.compare(spec, vs, demote)
        assert plain.provenance["created_at"] != demoted.provenance["created_at"]  # two keys, both measured
        assert demoted.primary == primary and demoted.verdict(1, demote, 0.005) == "no_difference"
        if primary == "graph":  # the flush-only graph holds the demotes too, so per-launch times stay > 0
            assert all(x > 0 for x in demoted.contenders[0].graph_ms)
