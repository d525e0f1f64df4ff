"""experiments/action_space/v3_ceiling.py on made-up reports: per kernel the fastest variant any stage timed
beside stock, the optimistic product of the best knob, block and PTX gains, and the winner reached."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    path = ROOT / "experiments/action_space/v3_ceiling.py"
    spec = importlib.util.spec_from_file_location("v3_ceiling", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(folder: Path, name: str, kernels: list[dict]) -> None:
    (folder / f"{name}.json").write_text(json.dumps({"kernels": kernels}))


def test_ceilings_take_each_stages_best_row_beside_stock_and_leave_out_kernels_the_walk_could_not_measure(
        tmp_path):
    mod = _script()
    k = {"family": "captured/w", "kernel": "a"}
    _write(tmp_path, "knob_walk", [{**k, "speedup": 1.05},
                                   {"family": "captured/w", "kernel": "atomics", "error": "float atomics"}])
    _write(tmp_path, "knob_census", [{**k, "candidates": [{"ratio": 0.8, "valid": True},
                                                          {"ratio": 0.5, "valid": False}]}])
    _write(tmp_path, "knob_blocks", [{**k, "candidates": [{"ratio": 1.2, "valid": True}]}])
    _write(tmp_path, "knob_ptx", [{**k, "candidates": []}])
    atomics = {"family": "captured/w", "kernel": "atomics", "families": {"x": {"ratio": 0.1}}}
    _write(tmp_path, "census", [{**k, "families": {"cache": {"ratio": 0.9}}}, atomics])
    ceilings = mod.kernel_ceilings(tmp_path)
    assert list(ceilings) == [("captured/w", "a")]
    assert ceilings[("captured/w", "a")] == pytest.approx(
        {"reached": 1.05, "knob": 1.25, "block": 1.0, "ptx": 1.0, "v2": 1 / 0.9})
    got = mod.summarize(ceilings)["all"]
    assert got["kernels"] == 1 and got["best_measured"] == pytest.approx(1.25)
    assert got["product_bound"] == pytest.approx(1.25 / 0.9)


def test_a_kernel_the_walk_did_not_reach_takes_its_latest_measured_stage_down_to_the_census(tmp_path):
    mod = _script()
    a, b = {"family": "captured/w", "kernel": "a"}, {"family": "captured/w", "kernel": "b"}
    _write(tmp_path, "knob_walk", [{**a, "error": "not_measured (run this stage on a GPU)"}])
    _write(tmp_path, "knob_blocks", [{**a, "speedup": 2.0}, {**b, "error": "no block variant"}])
    _write(tmp_path, "knob_ptx", [{**a, "speedup": 1.5}, {**b, "speedup": 1.1},
                                  {"family": "captured/w", "kernel": "c", "error": "not_measured (budget)"}])
    _write(tmp_path, "knob_census", [{**a, "speedup": 1.2}, {"family": "captured/w", "kernel": "c",
                                                              "speedup": 1.04}])
    assert mod.reached(tmp_path) == {("captured/w", "a"): 2.0, ("captured/w", "b"): 1.1,
                                     ("captured/w", "c"): 1.04}  # c: the census's one knob, confirmed


def test_step_bounds_weigh_each_kernel_by_its_gpu_time_and_put_it_into_the_profiles_triton_share(tmp_path):
    mod = _script()
    folder = tmp_path / "captured" / "w"
    (folder / "tune-parts").mkdir(parents=True)
    (folder / "capture.json").write_text(json.dumps({"per_kernel": [
        {"kernel": k, "launches": 1} for k in ("a", "b", "c")]}))
    for k, ms in (("a", 6.0), ("b", 2.0), ("c", 2.0)):  # 10 ms of Triton time; c measured by no stage
        (folder / "tune-parts" / f"{k}.json").write_text(json.dumps({"kernel": k, "baseline_ms": ms}))
    (folder / "profile.json").write_text(json.dumps({"phases": {
        "train": {"triton_us": 30.0, "total_us": 60.0}, "decode": {"triton_us": 20.0, "total_us": 40.0}}}))
    ceilings = {("captured/w", "a"): {"reached": 1.0, "knob": 1.5, "block": 1.0, "ptx": 1.0, "v2": 1.0},
                ("captured/w", "b"): {"reached": 2.0, "knob": 1.0, "block": 2.0, "ptx": 1.0, "v2": 1.0}}
    got = mod.step_bounds(ceilings, tmp_path)["captured/w"]
    assert got["triton_share"] == pytest.approx(0.5) and got["measured_share"] == pytest.approx(0.8)
    assert got["triton_reached"] == pytest.approx(10 / (6 + 1 + 2))
    assert got["triton_best"] == pytest.approx(10 / (4 + 1 + 2))
    assert got["triton_bound"] == pytest.approx(10 / (4 + 1 + 1))  # c at the largest best, 2.0
    assert got["step_best"] == pytest.approx(1 / (1 - 0.5 * (1 - 7 / 10)))
    assert got["step_bound"] > got["step_best"] > got["step_reached"] > 1.0
    assert got["triton_strict_bound"] == got["triton_bound"]  # no kernel skipped for float atomics
    strict = mod.step_bounds(ceilings, tmp_path, atomics={"captured/w": {"c"}})["captured/w"]
    assert strict["triton_strict_bound"] == pytest.approx(10 / (4 + 1 + 2))  # c outside the strict space
    assert strict["step_bound"] > strict["step_strict_bound"] == pytest.approx(got["step_best"])
    assert got["triton_product_bound"] == pytest.approx(10 / (4 + 1 + 1))  # a 1.5, b 2.0, c at the largest
    assert strict["triton_product_bound"] == pytest.approx(10 / (4 + 1 + 2))


def test_float_atomics_are_the_kernels_the_census_skipped_for_them(tmp_path):
    mod = _script()
    _write(tmp_path, "knob_census", [
        {"family": "captured/w", "kernel": "a", "error": "skipped: float atomics (atom.global.gpu.add.f32)"},
        {"family": "captured/w", "kernel": "b", "error": "not_measured (budget)"}])
    assert mod.float_atomics(tmp_path) == {"captured/w": {"a"}}


def test_the_deployed_column_counts_only_the_kernels_whose_winner_the_v3_db_holds():
    """On the committed bert parts: a maxnreg=255 winner (deployed as the PTX entry it equals) counts, the
    maxnreg=168 one (no register-budget action makes its PTX) and kernels without a winner do not."""
    pytest.importorskip("torch")
    mod = _script()
    parts = {p.stem for p in (ROOT / "data/knob_walk/captured/bert").glob("*.json")}
    ships = set(mod.deployed(ROOT / "data/kernels", "captured/bert", ROOT / "data",
                             dict.fromkeys(parts, 1.5)))
    assert ships and ships < parts | {p.stem for p in (ROOT / "data/knob_ptx/captured/bert").glob("*.json")}
    by_stem = {k.rsplit("_", 1)[0]: k for k in parts}
    maxnreg_255 = by_stem["triton_per_fused_add_native_dropout_backward_native_layer_norm_native_layer_norm_"
                          "backward_view_14_69ed5ddb"]
    assert maxnreg_255 in ships
    assert by_stem["triton_red_fused_gelu_gelu_backward_sum_view_12_8ef2c6ba"] not in ships
    assert mod.deployed(ROOT / "data/kernels", "captured/none", ROOT / "data", {}) is None


def test_shapes_whose_winners_differ_count_at_the_config_alone_that_won_at_each():
    """gpt2's cat_split_transpose_view_1 (one PTX at three shapes, three winners): each shape counts at
    num_warps=2's speedup there, not at its own winner's; every other kernel at its reached."""
    pytest.importorskip("torch")
    mod = _script()
    parts = {p.stem for p in (ROOT / "data/knob_walk/captured/gpt2").glob("*.json")}
    got = mod.deployed(ROOT / "data/kernels", "captured/gpt2", ROOT / "data", dict.fromkeys(parts, 1.5))
    shared = {k: s for k, s in got.items() if "cat_split_transpose_view_1_26c644b6" in k}
    assert len(shared) == 3 and all(1.7 < s < 2.1 for s in shared.values())
    assert {s for k, s in got.items() if k not in shared} == {1.5}


def test_the_deployed_column_less_some_actions_drops_exactly_the_winners_that_use_them():
    """bert's DB less its L2-policy winners (as `chronos tune --leave-out-actions l2_policy_streaming` writes
    it): every kernel it drops had a winner using an L2 policy on streaming loads, and no other."""
    pytest.importorskip("torch")
    from chronos.tuning.config_db import leave_out_actions

    mod = _script()
    parts = {p.stem for p in (ROOT / "data/knob_walk/captured/bert").glob("*.json")}
    every = mod.deployed(ROOT / "data/kernels", "captured/bert", ROOT / "data", dict.fromkeys(parts, 1.5))
    l2 = leave_out_actions(["l2_policy_streaming"])
    less = mod.deployed(ROOT / "data/kernels", "captured/bert", ROOT / "data", dict.fromkeys(parts, 1.5), l2)
    dropped = set(every) - set(less)
    assert dropped and set(less) < set(every)
    for k in dropped:
        best = json.loads((ROOT / "data/knob_walk/captured/bert" / f"{k}.json").read_text())["best"]
        assert set(best["actions"]) & l2
