"""The atlas plan (real ptxas), its measurement through the pool (fake worker), the oracle and replay."""

from __future__ import annotations

import concurrent.futures as cf
import json
from pathlib import Path

import pytest

from chronos.config import MeasureConfig
from chronos.errors import AtlasError, MeasurementMissError, StoreError
from chronos.kernels.spec import load_module, load_specs
from chronos.kernels.variant import Variant, sha256_text
from chronos.measure.backend import GpuBackend, ReplayBackend
from chronos.measure.store import Store
from chronos.ptx import emit
from chronos.sass import assemble_key
from chronos.search import space
from chronos.search.atlas_plan import AtlasDB, actions_of, build_kernel_plan, epoch_of, mask_of
from chronos.search.atlas_replay import AtlasReplay, backend_with_atlas
from chronos.stages import atlas as atlas_stage

from ..measure.test_pool_backend import fake

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "data/kernels/gemm_tile/specs.json"
SMALL_SLOTS = (("vec_ld",), space.CONFLICT_GROUPS["load_cache_hint"],
               space.CONFLICT_GROUPS["register_budget"])


def _spec(entry="gemm_tile_2_2_2"):
    return next(s for s in load_specs(SPECS) if s.entry == entry)


def test_mask_round_trip_is_canonical():
    acts = ("maxnreg_64", "vec_ld", "cache_cg")
    assert actions_of(mask_of(acts)) == space.canonical(acts) and mask_of(()) == 0
    with pytest.raises(Exception, match="conflict"):
        mask_of(("cache_cg", "cache_cs"))


def test_sass_key_ignores_metadata_but_not_code(ptxas):
    root = load_module(SPECS, _spec())
    base = assemble_key(emit(root), "sm_90a", str(ptxas))
    loose = assemble_key(emit(space.realize(root, ("maxnreg_255",))), "sm_90a", str(ptxas))
    hinted = assemble_key(emit(space.realize(root, ("cache_cs",))), "sm_90a", str(ptxas))
    assert loose.ptx_sha256 != base.ptx_sha256 and loose.sass_key == base.sass_key  # a budget it did not need
    assert hinted.sass_key != base.sass_key  # LDG.E.EF is other machine code


@pytest.fixture
def small_plan(tmp_path, monkeypatch, ptxas):
    """A plan for gemm_tile(2,2,2) over three slots (2 x 5 x 5 = 50 sets), built with real ptxas."""
    monkeypatch.setattr(space, "SLOTS", SMALL_SLOTS)
    spec = _spec()
    root = load_module(SPECS, spec)
    with cf.ThreadPoolExecutor(2) as ex:
        plan = build_kernel_plan(root, "sm_90a", ex, str(ptxas))
    db = AtlasDB(tmp_path / "atlas.sqlite", create=True)
    db.set_meta(ptxas="test", arch="sm_90a")
    db.add_kernel(spec.kernel, sha256_text(emit(root)), plan, 1.0)
    return db, spec, root, plan


def test_plan_groups_sets_by_sass_and_picks_small_representatives(small_plan):
    db, spec, _, plan = small_plan
    assert len(plan) == 50 and plan[0][0] == 0  # the empty set first
    k = db.kernels()[0]
    assert k["sets"] == 50 and 1 < k["variants"] < 50  # maxnreg_255/128 change no machine code here
    sets = db.variant_sets(spec.kernel)
    assert sum(len(m) for m in sets.values()) == 50
    for v, acts in db.representatives(spec.kernel):
        assert mask_of(acts) in sets[v] and len(acts) == min(m.bit_count() for m in sets[v])


def test_atlas_stage_measures_every_variant_once_and_replay_answers_every_set(small_plan, tmp_path, ptxas):
    db, spec, root, _ = small_plan
    cfg = MeasureConfig(watchdog_s=20)
    with GpuBackend(tmp_path / "scratch.sqlite", cfg, ptxas=str(ptxas), worker_argv=fake("varied"),
                    realize=space.realize_recipe) as be:
        atlas_stage.measure_missing(db, [("gemm_tile", SPECS, spec)], be)
        n_records = len(be.store.all())
        atlas_stage.measure_missing(db, [("gemm_tile", SPECS, spec)], be)  # resumes: nothing left to do
        assert len(be.store.all()) == n_records
    variants = db.kernels()[0]["variants"]
    assert n_records == variants and len(db.measured(spec.kernel)) == variants
    result = atlas_stage.oracle_of(db, spec, sha256_text(emit(root)))
    assert result["complete"] and result["measured"] == variants
    assert result["best"]["cycles"] == min(m["cycles_median"] for m in db.measured(spec.kernel).values())

    # Replay: every one of the 50 sets, realised here, is answered from the atlas (store beside it is empty).
    Store(tmp_path / "measurements.sqlite").close()
    with backend_with_atlas("replay", tmp_path / "measurements.sqlite", cfg) as rb:
        for acts, module in space.enumerate_sets(root):
            rec = rb.measure(spec, [Variant(spec, emit(module), acts)])[0]
            assert rec.valid and rec.gpu == "FakeGPU" and rec.cycles_median >= 1000.0
        best = space.realize(root, result["best"]["actions"])
        best_variant = Variant(spec, emit(best), tuple(result["best"]["actions"]))
        assert rb.measure(spec, [best_variant])[0].cycles_median == result["best"]["cycles"]
        drifted = Variant(spec, emit(root) + "\n// changed\n", ())
        with pytest.raises(MeasurementMissError, match="differs from the atlas plan"):
            rb.measure(spec, [drifted])


def test_oracle_report_and_incomplete_kernels(small_plan, tmp_path):
    db, spec, root, _ = small_plan
    sha = sha256_text(emit(root))
    r = atlas_stage.oracle_of(db, spec, sha)
    assert not r["complete"] and r["measured"] == 0 and "error" in r
    atlas_stage.write_oracle(tmp_path / "oracle.json", db, [r], MeasureConfig(), ["--x"])
    out = json.loads((tmp_path / "oracle.json").read_text())
    assert out["summary"]["complete"] == 0 and out["summary"]["sets"] == 50


def test_plan_drift_and_unknown_sets_are_clear_errors(small_plan):
    db, spec, _, _ = small_plan
    with pytest.raises(AtlasError, match="differs from the atlas plan"):
        db.variant_of(spec.kernel, (), "0" * 64)
    with pytest.raises(AtlasError, match="not a legal set"):
        db.variant_of(spec.kernel, ("prefetch_L2",), "0" * 64)
    assert db.variant_of("gemm_tile(9,9,9)", (), "0" * 64) is None
    with pytest.raises(AtlasError, match="does not exist"):
        AtlasDB(Path("/nonexistent/atlas.sqlite"))


def test_records_exported_from_a_gpu_run_merge_into_another_copy_of_the_plan(small_plan, tmp_path, ptxas):
    import shutil
    import sqlite3

    from chronos.search import atlas_records

    db, spec, _, _ = small_plan
    shutil.copy(db.path, tmp_path / "elsewhere.sqlite")  # the plan as it was before the GPU run
    with GpuBackend(tmp_path / "scratch.sqlite", MeasureConfig(watchdog_s=20), ptxas=str(ptxas),
                    worker_argv=fake("varied"), realize=space.realize_recipe) as be:
        atlas_stage.measure_missing(db, [("gemm_tile", SPECS, spec)], be)
        stamps = {r.ptx_sha256: r.created_at for r in be.store.all()}
    n = atlas_records.export(str(tmp_path / "scratch.sqlite"), str(tmp_path / "records.jsonl.gz"))
    assert atlas_records.merge(str(tmp_path / "records.jsonl.gz"), str(tmp_path / "elsewhere.sqlite")) == n
    assert AtlasDB(tmp_path / "elsewhere.sqlite").measured(spec.kernel) == db.measured(spec.kernel)
    first = min(stamps.values())
    with sqlite3.connect(db.path) as con:  # each measurement keeps its record's own time
        assert min(r[0] for r in con.execute("SELECT measured_at FROM measured")) == epoch_of(first)


def test_replay_reads_the_atlas_without_writing_and_only_through_the_search(small_plan, tmp_path):
    db, spec, root, _ = small_plan
    db.close()
    before = db.path.read_bytes()
    Store(tmp_path / "measurements.sqlite").close()
    with ReplayBackend(tmp_path / "measurements.sqlite", MeasureConfig()) as rb:
        assert rb.atlas is None  # measure never opens the atlas on its own
    with backend_with_atlas("replay", tmp_path / "measurements.sqlite", MeasureConfig(), gpu="FakeGPU") as rb:
        assert rb.atlas is None  # filtered to one GPU: the store's records of that GPU
    replay = AtlasReplay(db.path)
    with pytest.raises(StoreError, match="readonly"):  # a read-only connection
        replay.db.set_meta(x=1)
    assert replay.record(spec.kernel, (), sha256_text(emit(root)), "other config") is None
    replay.close()
    assert db.path.read_bytes() == before


def test_a_truncated_or_damaged_atlas_is_a_store_error_naming_it(small_plan, tmp_path):
    db, _, _, _ = small_plan
    db.close()
    whole = db.path.read_bytes()
    empty = tmp_path / "empty" / "atlas.sqlite"  # truncated to nothing: SQLite sees an empty database
    empty.parent.mkdir()
    empty.write_bytes(b"")
    with pytest.raises(StoreError, match=f"{empty}.*no table 'meta'"):
        AtlasReplay(empty)
    assert empty.read_bytes() == b""  # and replay wrote no schema into it
    half = tmp_path / "half.sqlite"  # truncated mid-file: pages the b-tree points at are gone
    half.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(StoreError, match=str(half)):
        AtlasReplay(half).db.measured("gemm_tile(2,2,2)")


def test_a_changed_value_in_a_kernels_rows_fails_its_digest(small_plan, tmp_path):
    """A bit flipped in a measurement still decodes as a number (quick_check passes): the kernel's digest
    catches it when the kernel is looked up; a plan made before digests says how to seal it."""
    import sqlite3

    from chronos.errors import AtlasError
    from chronos.search.atlas_records import seal

    db, spec, _, _ = small_plan
    row = {"valid": True, "cycles_median": 1000.0, "created_at": "2026-12-03T00:00:00Z"}
    db.record(spec.kernel, [(0, row)])
    db.close()
    assert AtlasDB(db.path, readonly=True).measured(spec.kernel)[0]["cycles_median"] == 1000.0
    raw = sqlite3.connect(db.path)
    with raw:
        raw.execute("UPDATE measured SET cycles_median = 1008.0")
    with pytest.raises(AtlasError, match=f"{db.path}: the rows of gemm_tile.2,2,2. fail their digest"):
        AtlasDB(db.path, readonly=True).measured(spec.kernel)
    with raw:
        raw.execute("DROP TABLE digests")
    raw.close()
    with pytest.raises(AtlasError, match=f"no digests.*atlas_records seal {db.path}"):
        AtlasDB(db.path, readonly=True).measured(spec.kernel)
    assert seal(str(db.path)) == 1  # sealed as it stands, then read
    assert AtlasDB(db.path, readonly=True).measured(spec.kernel)[0]["cycles_median"] == 1008.0


def test_the_committed_atlas_is_sealed():
    committed = AtlasDB(Path(__file__).resolve().parents[2] / "data/store/atlas.sqlite", readonly=True)
    kernels = [k["kernel"] for k in committed.kernels()]
    assert len(kernels) == 64 and all(committed.has(k) for k in kernels)  # each verified against its digest
    committed.close()
