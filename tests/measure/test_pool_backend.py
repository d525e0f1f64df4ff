"""Pool isolation with a fake worker (timeout, death, bad line, fault exit: restart, the run goes on) and
the GPU/replay backends' logic on CPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chronos.config import MeasureConfig
from chronos.errors import MeasureError, MeasurementMissError, PoolError
from chronos.kernels.gemm_tile import gemm_tile_ptx, gemm_tile_spec
from chronos.kernels.variant import Variant, sha256_text
from chronos.measure.backend import GpuBackend, ReplayBackend, make_backend
from chronos.measure.pool import WorkerPool
from chronos.measure.store import Store
from chronos.ptx import emit, parse
from chronos.transforms import apply_sequence

FAKE = str(Path(__file__).with_name("fake_worker.py"))


def fake(mode: str = "ok") -> tuple[str, ...]:
    return (sys.executable, FAKE, mode)


def test_pool_timeout_death_badline_fault_and_run_goes_on():
    pool = WorkerPool(1, argv=fake(), watchdog_s=1.5, startup_timeout_s=20)
    pool.start()
    jobs = [{"id": str(i), "spec": {"kernel": k}} for i, k in
            enumerate(["a", "hang", "b", "die", "c", "badline", "d", "fault", "e"])]
    got = {}
    pool.run(iter(jobs), lambda job, ans: got.__setitem__(job["spec"]["kernel"], ans))
    pool.close()
    assert {k: got[k]["reason"] for k in got} == {
        "a": "", "hang": "timeout", "b": "", "die": "worker_died", "c": "", "badline": "worker_died", "d": "",
        "fault": "fault:CUDA_ERROR_MISALIGNED_ADDRESS", "e": ""}
    assert all(got[k]["valid"] for k in "abcde")
    assert pool.restarts == 4 and len(pool.events) == 4
    assert pool.workers[0].starts == 5


def test_pool_sends_a_job_to_the_worker_it_names(monkeypatch):
    monkeypatch.delenv("CHRONOS_GPU_MAP", raising=False)
    pool = WorkerPool(2, argv=fake(), watchdog_s=10, startup_timeout_s=20)
    pool.start()
    jobs = [{"id": str(i), "spec": {"kernel": f"k{i % 3}"}, "variant": ["000"]} for i in range(12)]
    got = {}
    pool.run(iter(jobs), lambda job, ans: got.__setitem__(job["id"], ans),
             worker_of=lambda job: int(job["spec"]["kernel"][1]))
    pool.close()
    assert {j["id"]: got[j["id"]]["device"] for j in jobs} == {j["id"]: str(int(j["spec"]["kernel"][1]) % 2)
                                                               for j in jobs}


def test_pool_that_cannot_start_raises():
    pool = WorkerPool(1, argv=(sys.executable, "-c", "import sys; sys.exit(1)"), startup_timeout_s=10)
    with pytest.raises(PoolError, match="did not start"):
        pool.start()


def _variants():
    spec = gemm_tile_spec(2, 2, 2)
    base = gemm_tile_ptx(2, 2, 2)
    comment = base.replace("// one thread", "// a comment only: same SASS, one thread")
    return spec, [Variant(spec, base, ()), Variant(spec, comment, ("cache_ca",)),
                  Variant(spec, base.replace("fma.rn.f32", "bogus.f32"), ("vec_ld",))]


def test_gpu_backend_with_fake_worker_stores_dedupes_and_resumes(tmp_path, ptxas):
    cfg = MeasureConfig(watchdog_s=10)
    spec, vs = _variants()
    with GpuBackend(tmp_path / "m.sqlite", cfg, ptxas=str(ptxas), worker_argv=fake()) as be:
        recs = be.measure(spec, vs)
        assert [(r.valid, r.reason) for r in recs] == [(True, ""), (True, ""), (False, "ptxas_error")]
        assert recs[0].cubin_sha256 == recs[1].cubin_sha256
        assert sum("not measured again" in r.log for r in recs[:2]) == 1  # same SASS: measured once
        assert recs[0].registers > 0 and recs[0].cycles_median == 1000.0 and recs[0].gpu == "FakeGPU"
        n = len(be.store.all())
        again = be.measure(spec, vs)
        assert [r.id for r in again] == [r.id for r in recs] and len(be.store.all()) == n
    with ReplayBackend(tmp_path / "m.sqlite", cfg) as rb:
        assert [r.id for r in rb.measure(spec, vs)] == [r.id for r in recs]
        assert rb.provenance()["gpu"] == "FakeGPU"


def test_replay_miss_names_kernel_actions_and_hash(tmp_path, ptxas):
    spec, vs = _variants()
    with GpuBackend(tmp_path / "m.sqlite", MeasureConfig(), ptxas=str(ptxas), worker_argv=fake()) as be:
        be.measure(spec, vs[:1])
    rb = ReplayBackend(tmp_path / "m.sqlite", MeasureConfig())
    with pytest.raises(MeasurementMissError) as e:
        rb.measure(spec, [vs[1]])
    msg = str(e.value)
    assert "gemm_tile(2,2,2)" in msg and "cache_ca" in msg and vs[1].ptx_sha256 in msg and "reproduce:" in msg
    with pytest.raises(MeasurementMissError):  # another config is another measurement
        ReplayBackend(tmp_path / "m.sqlite", MeasureConfig(reps=3)).measure(spec, vs[:1])


def test_make_backend_auto_without_gpu_is_replay(tmp_path, monkeypatch):
    import chronos.toolchain as tc

    monkeypatch.setattr(tc, "cuda_gpu_available", lambda: False)
    Store(tmp_path / "m.sqlite").close()
    assert isinstance(make_backend("auto", tmp_path / "m.sqlite"), ReplayBackend)


def test_cubins_with_the_same_machine_code_are_measured_once(tmp_path, ptxas):
    from chronos.ptx import emit, parse
    from chronos.transforms import apply

    spec = gemm_tile_spec(2, 2, 2)
    base = gemm_tile_ptx(2, 2, 2)
    loose = emit(apply(parse(base), "maxnreg_128", defer_ptxas=True))  # a budget this kernel never needs
    cfg = MeasureConfig(watchdog_s=10)
    with GpuBackend(tmp_path / "m.sqlite", cfg, ptxas=str(ptxas), worker_argv=fake()) as be:
        recs = be.measure(spec, [Variant(spec, base, ()), Variant(spec, loose, ("maxnreg_128",))])
    assert recs[0].cubin_sha256 != recs[1].cubin_sha256  # the cubins differ (metadata) ...
    assert sum("not measured again" in r.log for r in recs) == 1  # ... the SASS does not: one measurement


def test_side_by_side_rounds_answer_per_candidate_and_a_fault_marks_only_its_kernel(tmp_path, ptxas):
    from chronos.measure.compile import compile_variant

    groups = []
    for name, shape in (("gemm_tile(2,2,2)", (2, 2, 2)), ("fault", (2, 2, 4))):
        spec = gemm_tile_spec(*shape)
        spec = type(spec).from_json({**spec.to_json(), "kernel": name}) if name == "fault" else spec
        base = compile_variant(gemm_tile_ptx(*shape), spec, "sm_90a", str(ptxas), False)
        cands = [compile_variant(gemm_tile_ptx(*shape), spec, "sm_90a", str(ptxas), True)] * 2
        groups.append((spec, base, cands))
    cfg = MeasureConfig(watchdog_s=10)
    with GpuBackend(tmp_path / "m.sqlite", cfg, ptxas=str(ptxas), worker_argv=fake()) as be:
        ok, bad = be.measure_rounds(groups, rounds=8)
        assert be.pool.restarts == 1
    assert [r["valid"] for r in ok] == [True, True] and ok[0]["cycles"]["median"] == ok[1]["cycles"]["median"]
    assert [r["reason"] for r in bad] == ["fault:CUDA_ERROR_MISALIGNED_ADDRESS"] * 2


def test_each_kernel_of_a_run_is_measured_on_one_gpu(tmp_path, ptxas, monkeypatch):
    monkeypatch.delenv("CHRONOS_GPU_MAP", raising=False)
    groups = []
    for shape in ((2, 2, 2), (2, 2, 4), (2, 4, 2)):
        spec = gemm_tile_spec(*shape)
        base = gemm_tile_ptx(*shape)
        root = parse(base)
        vs = [Variant(spec, base, ())] + [Variant(spec, emit(apply_sequence(root, list(acts))), acts)
                                          for acts in (("vec_ld",), ("vec_st",), ("vec_ld", "vec_st"))]
        groups.append((spec, vs, base))
    cfg = MeasureConfig(gpus=2, watchdog_s=10)
    with GpuBackend(tmp_path / "m.sqlite", cfg, ptxas=str(ptxas), worker_argv=fake()) as be:
        results = be.measure_many(groups)
    for records in results:
        measured = [r for r in records if "dedup_of" not in r.extra]
        assert len(measured) >= 3 and len({r.extra.get("device") for r in measured}) == 1
    assert [{r.extra.get("device") for r in recs} for recs in results][:2] == [{"0"}, {"1"}]


def _realize(recipe, actions):  # module level: it is pickled to the compile processes
    return None if "split_ld" in actions else gemm_tile_ptx(2, 2, 2)


def test_recipe_variants_are_realised_by_the_function_the_backend_is_given(tmp_path, ptxas):
    spec, base = gemm_tile_spec(2, 2, 2), gemm_tile_ptx(2, 2, 2)
    vs = [Variant(spec, "", acts, recipe=("specs.json", spec.entry))
          for acts in (("cache_ca",), ("split_ld",))]
    with GpuBackend(tmp_path / "m.sqlite", MeasureConfig(watchdog_s=10), ptxas=str(ptxas),
                    worker_argv=fake()) as be:
        with pytest.raises(MeasureError, match="no realize function"):
            be.measure(spec, vs, baseline_ptx=base)
        be.realize = _realize
        recs = be.measure(spec, vs, baseline_ptx=base)
    assert [(r.valid, r.reason) for r in recs] == [(True, ""), (False, "illegal")]
    assert recs[0].ptx_sha256 == sha256_text(base) and "[split_ld]: not a legal set" in recs[1].log


def test_make_backend_hands_replay_the_atlas_lookup_it_is_given(tmp_path):
    Store(tmp_path / "m.sqlite").close()
    calls = []

    class Lookup:
        last_miss = ""

        def record(self, kernel, actions, ptx_sha256, config_hash):
            return None

        def close(self):
            calls.append("closed")

    def open_atlas(store_path):
        calls.append(store_path)
        return Lookup()

    be = make_backend("replay", tmp_path / "m.sqlite", open_atlas=open_atlas)
    assert isinstance(be.atlas, Lookup) and calls == [tmp_path / "m.sqlite"]
    be.close()
    assert calls[-1] == "closed"
    with make_backend("replay", tmp_path / "m.sqlite", open_atlas=open_atlas, gpu="G") as be:
        assert be.atlas is None and len(calls) == 2  # filtered to one GPU: not opened


def test_a_backend_pointed_at_another_ptxas_assembles_and_records_with_it(tmp_path, ptxas):
    """Stage knob_* times a captured workload with the ptxas its Triton deploys with (use_ptxas): what it
    stores and reports names that ptxas, so that its winners are keyed as the hook will look them up."""
    from tests.measure.test_sidebyside import claiming_version

    other = claiming_version(tmp_path, ptxas, "12.8.93")
    spec, vs = _variants()
    with GpuBackend(tmp_path / "m.sqlite", MeasureConfig(watchdog_s=10), ptxas=str(ptxas),
                    worker_argv=fake()) as be:
        mine = be.provenance()["ptxas"]
        be.use_ptxas(str(other))
        recs = be.measure(spec, vs[:1])
        assert be.provenance()["ptxas"] == "12.8.93" != mine and recs[0].ptxas == "12.8.93" and recs[0].valid
    assert (tmp_path / "ptxas-runs").read_text().count("run") >= 1  # it assembled the variant
