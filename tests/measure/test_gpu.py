"""GPU tests (skipped without a CUDA GPU and pycuda): injected faults, bit-exact variants, resume."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from chronos.config import MeasureConfig
from chronos.kernels.spec import load_module, load_specs
from chronos.kernels.variant import Variant
from chronos.measure.backend import GpuBackend
from chronos.ptx import emit
from chronos.transforms import apply_sequence

pytestmark = pytest.mark.gpu
SPECS = Path(__file__).resolve().parents[2] / "data" / "kernels" / "gemm_tile" / "specs.json"
CFG = MeasureConfig(reps=10, cycle_samples=20, warmup=2, watchdog_s=20.0)


def _spec(name: str):
    return next(s for s in load_specs(SPECS) if s.kernel == name)


def _ptx(spec) -> str:
    return (SPECS.parent / spec.ptx).read_text()


def _mutate(ptx: str, old: str, new: str) -> str:
    assert old in ptx, old
    return ptx.replace(old, new, 1)


def _misaligned_v4(ptx: str) -> str:
    scalar = "".join(f"\tld.global.f32 \t%f{i + 1}, [%rd5{'+' + str(4 * i) if i else ''}];\n"
                     for i in range(4))
    vector = "\tld.global.v4.f32 \t{%f1, %f2, %f3, %f4}, [%rd5+4];\n"
    return _mutate(ptx, scalar, vector).replace(".ptr .global .align 16", ".ptr .global")


def test_misaligned_injection_keeps_every_element_live():
    out = _misaligned_v4(_ptx(_spec("gemm_tile(4,4,4)")))
    assert "ld.global.v4.f32 \t{%f1, %f2, %f3, %f4}, [%rd5+4];" in out
    assert "[%rd5+12]" not in out.split("v4")[1][:80]


def test_faults_are_recorded_and_the_run_goes_on(tmp_path):
    spec = _spec("gemm_tile(4,4,4)")
    base = _ptx(spec)
    good = emit(apply_sequence(load_module(SPECS, spec), ["vec_ld", "vec_st", "maxnreg_128"]))
    variants = [
        Variant(spec, base, ()),
        # the first four B loads become one v4 load at B+4: every element is used, so ptxas must keep the
        # 16-byte LDG, and .align 16 is dropped so it cannot know the address is misaligned
        Variant(spec, _misaligned_v4(base), ("inject_misaligned_v4",)),
        Variant(spec, _mutate(base, "cvta.to.global.u64 \t%rd6, %rd3;", "mov.u64 \t%rd6, 64;"),
                ("inject_oob_store",)),
        Variant(spec, _mutate(base, "cvta.to.global.u64 \t%rd4, %rd1;", "bogus.op \t%rd4, %rd1;"),
                ("inject_ptxas",)),
        Variant(spec, _mutate(base, "cvta.to.global.u64 \t%rd4, %rd1;",
                              "$Lspin:\n\tbra.uni \t$Lspin;\n\tcvta.to.global.u64 \t%rd4, %rd1;"),
                ("inject_hang",)),
        Variant(spec, _mutate(base, "fma.rn.f32", "fma.rz.f32"), ("inject_wrong",)),
        Variant(spec, good, ("vec_ld", "vec_st", "maxnreg_128")),
    ]
    with GpuBackend(tmp_path / "m.sqlite", CFG) as be:
        recs = be.measure(spec, variants)
        events = list(be.pool.events)
        stored = be.store.all()
    got = {r.actions: (r.valid, r.reason) for r in recs}
    print(got, events)
    assert got[()] == (True, "")
    assert got[("inject_misaligned_v4",)] == (False, "fault:CUDA_ERROR_MISALIGNED_ADDRESS")
    assert got[("inject_oob_store",)] == (False, "fault:CUDA_ERROR_ILLEGAL_ADDRESS")
    assert got[("inject_ptxas",)] == (False, "ptxas_error")
    assert got[("inject_hang",)] == (False, "timeout")
    assert got[("inject_wrong",)] == (False, "wrong_output")
    assert got[("vec_ld", "vec_st", "maxnreg_128")] == (True, "")
    assert len(stored) == len(variants)
    assert all(r.cycles_median and r.time_ms_median for r in recs if r.valid)


def test_sigkilled_worker_is_recorded_and_restarted(tmp_path):
    spec = _spec("gemm_tile(2,2,2)")
    base = _ptx(spec)
    hang = _mutate(base, "cvta.to.global.u64 \t%rd4, %rd1;",
                   "$Lspin:\n\tbra.uni \t$Lspin;\n\tcvta.to.global.u64 \t%rd4, %rd1;")
    cfg = MeasureConfig(reps=10, cycle_samples=20, warmup=2, watchdog_s=120.0)
    with GpuBackend(tmp_path / "m.sqlite", cfg) as be:
        pid = be.pool.workers[0].proc.pid
        timer = threading.Timer(5.0, os.kill, (pid, signal.SIGKILL))
        timer.start()
        recs = be.measure(spec, [Variant(spec, hang, ("inject_hang",))], baseline_ptx=base)
        timer.cancel()
        after = be.measure(spec, [Variant(spec, base, ())])
    assert (recs[0].valid, recs[0].reason) == (False, "worker_died")
    assert after[0].valid


def test_gemm_vec_variant_bit_exact_and_resume(tmp_path):
    spec = _spec("gemm_tile(4,6,8)")
    base = _ptx(spec)
    good = emit(apply_sequence(load_module(SPECS, spec), ["vec_ld", "vec_st", "maxnreg_128"]))
    vs = [Variant(spec, base, ()), Variant(spec, good, ("vec_ld", "vec_st", "maxnreg_128"))]
    with GpuBackend(tmp_path / "m.sqlite", CFG) as be:
        first = be.measure(spec, vs)
        again = be.measure(spec, vs)
    assert all(r.valid for r in first), [(r.reason, r.log) for r in first]
    assert [r.id for r in again] == [r.id for r in first]  # answered from the store, not re-measured


def test_side_by_side_rounds_verify_each_candidate_and_pool_the_samples(tmp_path):
    from chronos.measure.compile import compile_variant

    spec = _spec("gemm_tile(4,4,4)")
    base = _ptx(spec)
    good = emit(apply_sequence(load_module(SPECS, spec), ["vec_ld", "vec_st"]))
    wrong = _mutate(base, "fma.rn.f32", "fma.rz.f32")
    with GpuBackend(tmp_path / "store.sqlite", CFG) as backend:
        b = compile_variant(base, spec, CFG.arch, backend.ptxas, False)
        cands = [compile_variant(p, spec, CFG.arch, backend.ptxas, True) for p in (base, good, wrong)]
        (res,) = backend.measure_rounds([(spec, b, cands)], rounds=4)
    assert [r["valid"] for r in res] == [True, True, False] and res[2]["reason"] == "wrong_output"
    for r in res[:2]:  # reps and samples split over the rounds, then pooled
        assert r["cycles"]["n"] == 4 * (CFG.cycle_samples // 4) and r["time_ms"]["n"] == 4 * (CFG.reps // 4)
        assert r["cycles"]["median"] > 0 and r["time_ms"]["median"] > 0
