"""Side-by-side comparisons through the GPU backend (fake worker) and replay: stored once, answered from the
store afterwards, replayed exactly, a miss named; ptxas failures and worker faults become contenders'
verdicts and the run goes on."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from chronos.config import MeasureConfig, TimingConfig
from chronos.errors import ComparisonMissError, MeasureError
from chronos.kernels.gemm_tile import gemm_tile_ptx, gemm_tile_spec
from chronos.kernels.variant import Variant
from chronos.measure.backend import GpuBackend, ReplayBackend
from chronos.measure.store import Store
from chronos.ptx import emit, parse
from chronos.transforms import apply_sequence

FAKE = str(Path(__file__).with_name("fake_worker.py"))
TIMING = TimingConfig(rounds=6, resamples=500)


def _contenders(name: str = "gemm_tile(2,2,2)"):
    spec = dataclasses.replace(gemm_tile_spec(2, 2, 2), kernel=name)
    base = gemm_tile_ptx(2, 2, 2)
    same_sass = base.replace("// one thread", "// a comment only: same SASS, one thread")
    broken = base.replace("fma.rn.f32", "bogus.f32")
    return spec, [Variant(spec, base, ()), Variant(spec, base, ()), Variant(spec, same_sass, ("cache_ca",)),
                  Variant(spec, broken, ("vec_ld",))]


def claiming_version(tmp_path, ptxas, version: str) -> Path:
    """A ptxas that is `ptxas` but says it is `version` (two ptxas versions on one machine); it notes each
    assembly in tmp_path/ptxas-runs."""
    other = tmp_path / "ptxas"
    other.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "V{version}"; exit; fi\n'
                     f'echo run >> {tmp_path}/ptxas-runs\nexec {ptxas} "$@"\n')
    other.chmod(0o755)
    return other


def _gpu(tmp_path, mode="ok", **kw):
    return GpuBackend(tmp_path / "m.sqlite", MeasureConfig(watchdog_s=10, **kw), ptxas=kw.pop("ptxas", None),
                      worker_argv=(sys.executable, FAKE, mode))


def test_a_comparison_is_stored_once_and_replayed_exactly(tmp_path, ptxas):
    spec, vs = _contenders()
    with GpuBackend(tmp_path / "m.sqlite", MeasureConfig(watchdog_s=10), ptxas=str(ptxas),
                    worker_argv=(sys.executable, FAKE, "ok")) as be:
        cmp = be.compare(spec, vs, TIMING)
        again = be.compare(spec, vs, TIMING)  # answered from the store: no second row
        assert again.to_json() == cmp.to_json()
    assert [c.valid for c in cmp.contenders] == [True, True, True, False]
    assert cmp.contenders[3].reason == "ptxas_error"
    assert cmp.verdict(3, TIMING, 0.005) == "invalid:ptxas_error"
    assert cmp.contenders[0].cubin_sha256 == cmp.contenders[1].cubin_sha256
    assert len(cmp.series(1)) == TIMING.rounds and cmp.provenance["gpu"] == "FakeGPU"
    db = Store(tmp_path / "m.sqlite", readonly=True)
    assert db.db.execute("SELECT count(*) FROM comparisons").fetchone()[0] == 1
    with ReplayBackend(tmp_path / "m.sqlite", MeasureConfig(watchdog_s=10)) as rb:
        replayed = rb.compare(spec, vs, TIMING)
        assert replayed.to_json() == cmp.to_json() and rb.provenance()["gpu"] == "FakeGPU"
        for i in range(3):  # a verdict recomputed from the stored rounds is the same verdict
            assert replayed.verdict(i, TIMING, 0.005) == cmp.verdict(i, TIMING, 0.005)
        with pytest.raises(ComparisonMissError, match=r"gemm_tile\(2,2,2\).*3 contenders"):
            rb.compare(spec, vs[:3], TIMING)
        with pytest.raises(ComparisonMissError):  # another timing config is another measurement
            rb.compare(spec, vs, dataclasses.replace(TIMING, rounds=7))


def test_a_stored_comparison_assembled_by_another_ptxas_is_timed_again(tmp_path, ptxas):
    """The knob stages switch ptxas per workload (GpuBackend.use_ptxas): a comparison stored under another
    ptxas timed other cubins, so it is not the answer."""
    other = claiming_version(tmp_path, ptxas, "12.8.93")
    spec, vs = _contenders()
    with GpuBackend(tmp_path / "m.sqlite", MeasureConfig(watchdog_s=10), ptxas=str(ptxas),
                    worker_argv=(sys.executable, FAKE, "ok")) as be:
        first = be.compare(spec, vs, TIMING)
        be.use_ptxas(str(other))
        second = be.compare(spec, vs, TIMING)
        assert be.compare(spec, vs, TIMING).to_json() == second.to_json()  # now answered from the store
    assert first.provenance["ptxas"] != "12.8.93" and second.provenance["ptxas"] == "12.8.93"
    db = Store(tmp_path / "m.sqlite", readonly=True)
    assert db.db.execute("SELECT count(*) FROM comparisons").fetchone()[0] == 2


def test_the_first_contender_must_be_the_baseline(tmp_path):
    spec, vs = _contenders()
    store = tmp_path / "m.sqlite"
    Store(store).close()
    with ReplayBackend(store, MeasureConfig()) as rb, pytest.raises(MeasureError, match="first contender"):
        rb.compare(spec, vs[2:], TIMING)


def test_a_worker_fault_marks_the_contender_that_faults_and_the_run_goes_on(tmp_path, ptxas):
    """The fake faults on any job with two distinct cubins: the whole job is lost, then each challenger is
    tried alone beside the baseline; the one that faults is marked, the others are compared again."""
    bad_spec, bad = _contenders("gemm_tile_cmpfault")
    other = emit(apply_sequence(parse(bad[0].ptx), ["cache_cs"]))
    spec, vs = _contenders()
    with GpuBackend(tmp_path / "m.sqlite", MeasureConfig(watchdog_s=10), ptxas=str(ptxas),
                    worker_argv=(sys.executable, FAKE, "ok")) as be:
        cmp = be.compare(bad_spec, [bad[0], bad[1], Variant(bad_spec, other, ("cache_cs",))], TIMING)
        ok = be.compare(spec, vs, TIMING)
    assert [c.valid for c in cmp.contenders] == [True, True, False]
    assert cmp.contenders[2].reason == "fault:CUDA_ERROR_LAUNCH_FAILED" and cmp.contenders[1].event_ms
    assert [c.valid for c in ok.contenders] == [True, True, True, False]


def test_retry_invalid_measures_again_a_comparison_whose_baseline_was_invalid(tmp_path, ptxas):
    """A stored comparison that measured nothing (its baseline invalid, e.g. a worker error) is answered as
    stored, unless the backend has retry_invalid: then it is measured again and replay answers the new one."""
    from chronos.measure.comparison import contenders_key
    from chronos.toolchain import ptxas_version

    spec, vs = _contenders()
    vs = vs[:3]
    th = TIMING.timing_hash(MeasureConfig(watchdog_s=10).config_hash())
    dead = {"kernel": spec.kernel, "primary": "event", "probe_ms": None, "flush_graph_ms": None,
            "contenders": [{"actions": list(v.actions), "ptx_sha256": v.ptx_sha256, "valid": False,
                            "reason": "worker_error", "log": "stand-in"} for v in vs]}
    db = Store(tmp_path / "m.sqlite")
    db.insert_comparison(spec.kernel, contenders_key([v.ptx_sha256 for v in vs]), th,
                         {"gpu": "FakeGPU", "driver": "0.0 (CUDA 0.0)", "ptxas": ptxas_version(ptxas)}, dead)
    db.close()
    for retry, valid in ((False, False), (True, True)):
        with GpuBackend(tmp_path / "m.sqlite", MeasureConfig(watchdog_s=10), ptxas=str(ptxas),
                        worker_argv=(sys.executable, FAKE, "ok"), retry_invalid=retry) as be:
            assert be.compare(spec, vs, TIMING).baseline.valid is valid
    with ReplayBackend(tmp_path / "m.sqlite", MeasureConfig(watchdog_s=10)) as rb:
        assert [c.valid for c in rb.compare(spec, vs, TIMING).contenders] == [True, True, True]
