"""Stage `random_time`: headroom's stage with seeded random sets (chronos.search.timed_random) — a GPU run
(fake worker) writes parts that replay as recorded, the committed parts replay from the committed store, and
the report sets it beside greedy."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.stages import random_time
from tests.stages.test_headroom import _fake_gpu_run

ROOT = Path(__file__).resolve().parents[2]


def test_a_gpu_run_draws_the_sets_in_one_comparison_and_replays_as_recorded(tmp_path, monkeypatch, ptxas):
    argv = _fake_gpu_run(tmp_path, monkeypatch, ptxas, "per_family: 24", "per_family: 2")
    assert random_time.main([*argv, "--out", str(tmp_path / "gpu.json")]) == 0
    parts = sorted((tmp_path / "p/captured/flex").glob("*.json"))
    assert len(parts) == 2
    for p in parts:
        search = json.loads(p.read_text())
        assert search["strategy"] == "random_time" and len(search["trace"]) == 1
        assert 1 <= search["trace"][0]["drawn"] <= 16
        assert search["comparisons"] == (1 if search["trace"][0]["chosen"] == "stop" else 2)
    monkeypatch.undo()
    assert random_time.main([*argv, "--out", str(tmp_path / "replay.json"), "--backend", "replay"]) == 0
    rep = json.loads((tmp_path / "replay.json").read_text())
    assert rep["disagreements"] == [] and all(r["as_recorded"] for r in rep["kernels"])
    assert rep["params"]["sets"] == 16 and rep["params"]["timing"]["l2_demote"] is True


def test_the_committed_parts_replay_from_the_committed_store(tmp_path):
    params = tmp_path / "params.yaml"
    text = (ROOT / "params.yaml").read_text().replace("per_family: 24", "per_family: 2")
    params.write_text(text.replace("captured/llama, captured/gpt2, captured/bert, captured/flex, triton_llm",
                                   "captured/flex"))
    out = tmp_path / "rt.json"
    assert random_time.main(["--params", str(params), "--kernels", str(ROOT / "data/kernels"),
                             "--parts", str(ROOT / "data/random_time"), "--out", str(out), "--backend",
                             "replay", "--store", str(ROOT / "data/store/measurements.sqlite")]) == 0
    rep = json.loads(out.read_text())
    assert len(rep["kernels"]) == 2 and all(r["as_recorded"] for r in rep["kernels"])


def test_the_report_sets_random_beside_greedy():
    from chronos.report.readme import headroom_section
    from chronos.report.tables import headroom_metrics, random_vs_greedy

    def rep(speedups, **params):
        return {"params": {"space": "v2", **params},
                "kernels": [{"family": "f", "kernel": k, "speedup": s, "baseline_ms": 0.01,
                             "roofline_fraction": 0.5, "gain_family": None,
                             "best": {"actions": ["a"] if s > 1 else [], "ci": [0.9, 0.95],
                                      "verdict": "faster"}} for k, s in speedups.items()]}

    greedy = rep({"a": 1.10, "b": 1.00, "c": 1.05})
    rand = rep({"a": 1.02, "b": 1.03, "d": 1.5}, sets=16, max_steps=3, seed=0)
    v = random_vs_greedy(greedy, rand)
    assert v["kernels"] == 2 and v["random_larger"] == 1 and v["greedy_larger"] == 1 and v["sets"] == 16
    assert abs(v["greedy_geomean"] - (1.10 * 1.00) ** 0.5) < 1e-12
    assert random_vs_greedy(greedy, None) is None
    assert headroom_metrics(greedy, random_time=rand)["v2"]["random_vs_greedy"] == v
    note = headroom_section(greedy, v)[-1]
    assert "16 random legal sets of 1 to 3 actions" in note and "on 2 of these kernels" in note
