"""The walks' manifest (walk.json) as committed: each root's neighbours are what the GPU walk compared, and a
committed walk replays from the store as it was recorded (the compiler and the backend both replayed)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from chronos.config.params import load
from chronos.kernels.spec import load_specs
from chronos.measure.backend import ReplayBackend
from chronos.search.knob_blocks import v3_winner
from chronos.search.knob_walk import PREFIX, Point, walk_kernel
from chronos.triton.walk_manifest import ManifestCompiler

ROOT = Path(__file__).resolve().parents[2]
BERT = ROOT / "data" / "kernels" / "captured" / "bert"
KERNEL = "triton_per_fused_gelu_native_layer_norm_native_layer_norm_backward_view_6_086e135b_eb1f87"
PART = ROOT / "data" / "knob_walk" / "captured" / "bert" / f"{KERNEL}.json"


def _spec():
    return next(s for s in load_specs(BERT / "specs.json") if s.kernel == KERNEL)


def test_the_first_step_compares_every_compiled_neighbour_of_the_stock_config():
    compiler, spec, part = ManifestCompiler(BERT), _spec(), json.loads(PART.read_text())
    entry = compiler.entry(spec)
    stock = Point.of(entry["stock"])
    near = compiler.neighbours(entry, stock)
    assert near and stock.label not in {p.label for p in near}
    assert all(p.num_stages == stock.num_stages for p in near)
    got = compiler.variants(spec, near)
    compiled = {PREFIX + label for label, v in got.items() if not isinstance(v, dict)}
    first = part["walk"][0]
    timed = {c["action"] for c in first["candidates"] if "ratio" in c}
    assert timed <= compiled and timed  # what was timed was compiled from these neighbours
    assert first["from"] == stock.label


def test_a_committed_walk_replays_as_recorded():
    cfg = load(ROOT / "params.yaml")
    kcfg = cfg.search.knob_census
    measure = replace(cfg.measure, tolerance=kcfg.anchor_tolerance)
    backend = ReplayBackend(ROOT / "data" / "store" / "measurements.sqlite", measure)
    spec, part = _spec(), json.loads(PART.read_text())
    parts = {"knob_ptx": ROOT / "data" / "knob_ptx", "knob_blocks": ROOT / "data" / "knob_blocks"}
    prior = v3_winner(spec, BERT, parts, "captured/bert")
    row = walk_kernel(spec, BERT, prior, ManifestCompiler(BERT), backend, kcfg.timing_for(cfg.timing),
                      cfg.search.greedy.min_gain, kcfg.walk_steps)
    backend.close()
    assert row["best"]["actions"] == part["best"]["actions"] and row["best"]["actions"][0].startswith(PREFIX)
    assert abs(row["speedup"] - part["speedup"]) < 1e-12 and row["speedup"] > 1.2
    assert [t["chosen"] for t in row["walk"]] == [t["chosen"] for t in part["walk"]]


def test_a_broken_manifest_is_a_clear_error_naming_it(tmp_path):
    import pytest

    from chronos.errors import ChronosError

    (tmp_path / "walk.json").write_text('{"kernels": [')
    with pytest.raises(ChronosError, match=r"walk\.json: not a walk manifest .*make_walk_roots"):
        ManifestCompiler(tmp_path)
    (tmp_path / "walk.json").write_text('{"provenance": {}}')
    with pytest.raises(ChronosError, match="not a walk manifest"):
        ManifestCompiler(tmp_path)
    assert ManifestCompiler(tmp_path / "absent").entry(_spec()) is None  # no manifest: no walk roots


def test_a_root_whose_module_is_missing_is_a_clear_error_naming_it(tmp_path):
    import pytest

    from chronos.errors import ChronosError

    entry = {**ManifestCompiler(BERT).entry(_spec()), "module": "walk/gone/module.py.gz"}
    (tmp_path / "walk.json").write_text(json.dumps({"kernels": {}}))
    with pytest.raises(ChronosError, match=r"walk/gone/module\.py\.gz: the walk root's module is missing.*"
                                           r"make_walk_roots"):
        ManifestCompiler(tmp_path).neighbours(entry, Point.of(entry["stock"]))
