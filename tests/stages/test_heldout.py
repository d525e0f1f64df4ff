"""Stage `heldout` over recorded census-format parts (the headroom search's step 0 is one): every score is
a recorded outcome, the oracle bounds every method per kernel, the fixed action is chosen without the
held-out family, and the curves cover every fold and epoch."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from chronos.actions import resolve_space
from chronos.rl import heldout as heldout_lib
from chronos.search.runs import kernels_of
from chronos.stages import heldout

ROOT = Path(__file__).resolve().parents[2]


def test_leave_one_workload_out_on_recorded_step_0_outcomes(tmp_path):
    params = tmp_path / "params.yaml"
    text = (ROOT / "params.yaml").read_text()
    params.write_text(text.replace("bc_epochs: 200", "bc_epochs: 20").replace("epochs: 1500", "epochs: 15")
                      .replace("fixed_beam: 3", "fixed_beam: 2")
                      .replace("select_stops: [0, 150, 500, 1500]", "select_stops: [0, 5, 15]")
                      .replace("select_bc_epochs: [50, 200]", "select_bc_epochs: [5, 20]"))
    out, curves = tmp_path / "heldout.json", tmp_path / "curves.csv"
    assert heldout.main(["--params", str(params), "--census", str(ROOT / "data/headroom"), "--out", str(out),
                         "--curves", str(curves)]) == 0
    rep = json.loads(out.read_text())
    rows = rep["kernels"]
    assert len(rows) == rep["total"]["kernels"] == sum(f["kernels"] for f in rep["families"].values()) > 10
    for r in rows:
        part = next((ROOT / "data/headroom").glob(f"**/{r['kernel']}.json"))
        cands = {c["action"]: c for c in json.loads(part.read_text())["trace"][0]["candidates"]}
        for m, g in r["gain"].items():
            assert 0 <= g <= r["gain"]["oracle"] + 1e-12, (r["kernel"], m)
        a = r["actions"]["policy"]
        want = -math.log(cands[a]["ratio"]) if a != "stop" and cands[a].get("verdict") == "faster" else 0.0
        assert r["gain"]["policy"] == want  # the recorded outcome of the chosen action, nothing else
    flex = [r for r in rows if r["family"] == "captured/flex"]
    v2 = resolve_space("v2")
    others = heldout_lib.load_decisions(ROOT / "data/kernels", ROOT / "data/headroom",
                                    ["captured/llama", "captured/gpt2", "captured/bert", "triton_llm"], v2)
    assert {r["actions"]["fixed"] for r in flex} == {v2.names[heldout_lib.fixed_action(others)]}
    # fixed_beam: the ranking's 2 best actions measured on the kernel, the better one deploys
    ranking = [v2.names[a] for a in heldout_lib.fixed_ranking(others)]
    for r in flex:
        part = next((ROOT / "data/headroom").glob(f"**/{r['kernel']}.json"))
        cands = json.loads(part.read_text())["trace"][0]["candidates"]
        legal = [c["action"] for c in cands if c.get("valid")]
        assert r["actions"]["fixed_beam"] == [a for a in ranking if a in legal][:2]
        assert r["gain"]["fixed_beam"] >= r["gain"]["fixed"] or r["actions"]["fixed"] not in legal
        assert set(r["actions"]["fixed_beam"]) - {"stop"} <= set(heldout_lib.distinct_picks(r["actions"]))
    assert "fixed_beam" in rep["total"] and rep["params"]["fixed_beam"] == 2
    t = rep["total"]
    assert math.isclose(t["policy"]["oracle_share"], t["gain"]["policy"] / t["gain"]["oracle"])
    assert math.isclose(t["time_geomean"]["oracle"], math.exp(t["gain"]["oracle"] / len(rows)))
    lines = list(csv.DictReader(curves.open()))
    assert len(lines) == 15 * len(rep["families"])
    assert {"reward", "kl", "entropy", "heldout_gain", "train_gain"} <= set(lines[0])
    assert set(rep["stability"]) == set(rep["families"])
    # the multi-step comparator: each kernel's greedy search as headroom recorded it
    assert rep["greedy_search"]["kernels"] == len(rows) and rep["greedy_search"]["max_steps"] == 6
    for r in rows:
        best = json.loads(next((ROOT / "data/headroom").glob(f"**/{r['kernel']}.json")).read_text())["best"]
        assert r["greedy_search"]["actions"] == best["actions"]


def test_greedy_search_deploys_only_a_faster_set_and_skips_kernels_without_a_search(tmp_path):
    for kernel, actions, ratio, verdict in (("a", ["cache_cs", "maxnreg_64"], 0.9, "faster"),
                                            ("b", ["cache_cs"], 0.98, "no_difference"), ("c", [], 1.0, "")):
        (tmp_path / "fam").mkdir(exist_ok=True)
        best = {"actions": actions, "ratio": ratio, "verdict": verdict}
        (tmp_path / "fam" / f"{kernel}.json").write_text(json.dumps({"best": best}))
    rows = [{"family": "fam", "kernel": k} for k in ("a", "b", "c", "missing")]
    heldout_lib.greedy_search(rows, tmp_path)
    gains = [r["greedy_search"] and r["greedy_search"]["gain"] for r in rows]
    assert gains == [-math.log(0.9), 0.0, 0.0, None]
    t = heldout_lib.greedy_totals(rows)
    assert t["kernels"] == 3 and t["multi_step"] == 1
    assert math.isclose(t["time_geomean"], (1 / 0.9) ** (1 / 3))


def test_the_heldout_totals_become_v2_metrics_and_a_readme_table():
    from chronos.report.readme import heldout_section
    from chronos.report.tables import headroom_metrics

    t = heldout_lib.totals([
        {"gain": {"policy": 0.02, "beam": 0.03, "bc": 0.0, "fixed": 0.01, "oracle": 0.04}},
        {"gain": {"policy": 0.0, "beam": 0.0, "bc": 0.0, "fixed": 0.0, "oracle": 0.0}}])
    assert math.isclose(t["policy"]["oracle_share"], 0.5) and math.isclose(t["policy"]["gap_closed"], 1 / 3)
    assert math.isclose(t["beam"]["gap_closed"], 2 / 3) and math.isclose(t["bc"]["gap_closed"], -1 / 3)
    one = {"policy": 0.01, "beam": 0.01, "bc": 0.0, "fixed": 0.0, "oracle": 0.02}
    measured = heldout_lib.totals([{"gain": one}])
    rep = {"total": t, "measured": measured, "families": {"captured/bert": t},
           "families_measured": {"captured/bert": measured}, "params": {"beam": 3}}
    v2 = headroom_metrics(None, None, rep)["v2"]
    assert v2["heldout"]["oracle_share"] == 0.5 and v2["heldout"]["kernels"] == 1  # the side-by-side scores
    assert v2["heldout_census"]["oracle_share"] == t["policy"]["oracle_share"]
    assert v2["heldout_census"]["kernels"] == 2
    assert math.isclose(v2["fixed_set_census"]["time_geomean"], math.exp(0.005))
    assert v2["fixed_set"]["time_geomean"] == 1.0
    assert v2["heldout_beam_census"]["time_geomean"] == t["time_geomean"]["beam"]
    lines = heldout_section(rep)
    assert lines[4].startswith("| captured/bert | 2 | 1.0101 (1.0101) |")
    assert lines[5].startswith("| all | 2 |")
    assert "policy: 50.0% of the oracle's log-gain" in lines[-1] and heldout_section(None) == []
    assert headroom_metrics(None, None, {"total": {"kernels": 0}}) == {}
    rep["greedy_search"] = {"kernels": 2, "multi_step": 1, "time_geomean": 1.01, "max_steps": 6}
    assert headroom_metrics(None, None, rep)["v2"]["greedy_search"] == {"kernels": 2, "multi_step": 1,
                                                                         "time_geomean": 1.01}
    assert "Greedy search in time (stage headroom, up to 6 actions" in heldout_section(rep)[-1]
    assert "heldout_fixed_beam" not in headroom_metrics(None, None, rep)["v2"]  # heldout.fixed_beam off


def test_fixed_beam_is_scored_and_reported_only_where_it_was_on():
    from chronos.report.readme import heldout_section
    from chronos.report.tables import headroom_metrics

    gains = [{"policy": 0.02, "beam": 0.03, "bc": 0.0, "fixed": 0.01, "oracle": 0.04, "fixed_beam": 0.04},
             {"policy": 0.0, "beam": 0.0, "bc": 0.0, "fixed": 0.0, "oracle": 0.0, "fixed_beam": 0.0}]
    t = heldout_lib.totals([{"gain": g} for g in gains])
    assert t["fixed_beam"] == {"oracle_share": 1.0, "gap_closed": 1.0}
    rep = {"total": t, "measured": t, "families": {"captured/bert": t}, "families_measured": {},
           "params": {"beam": 3, "fixed_beam": 3}}
    v2 = headroom_metrics(None, None, rep)["v2"]
    assert v2["heldout_fixed_beam"]["oracle_share"] == 1.0 and v2["heldout_fixed_beam_census"]["kernels"] == 2
    lines = heldout_section(rep)
    assert lines[2].endswith("| oracle | fixed_beam |")
    assert "fixed_beam: 100.0% of the oracle's log-gain" in lines[-1]
    assert "the 3 best actions of the fixed ranking" in lines[-1]
    actions = {"policy": "a", "beam": ["a", "b"], "bc": "c", "fixed": "d", "oracle": "b",
               "fixed_beam": ["d", "e"]}
    # fixed_beam's new picks come last
    assert heldout_lib.distinct_picks(actions) == ["a", "b", "c", "d", "e"]
    del actions["fixed_beam"]
    assert heldout_lib.distinct_picks(actions) == ["a", "b", "c", "d"]


def test_picks_recorded_elsewhere_are_timed_side_by_side_then_replayed(tmp_path, monkeypatch, ptxas):
    """--picks through the GPU backend (fake worker) into a scratch store: one comparison per kernel of the
    baseline and its distinct picks; the `measured` totals score every method on it."""
    import sys

    from chronos.config import MeasureConfig
    from chronos.measure.backend import GpuBackend

    fake = str(ROOT / "tests/measure/fake_worker.py")
    store = tmp_path / "m.sqlite"
    picks = {"kernels": [
        {"family": "triton_llm", "kernel": "softmax_r8192_c4096",
         "actions": {"policy": "l2_evict_last_streaming", "beam": ["l2_evict_last_streaming", "maxnreg_32"],
                     "bc": "stop", "fixed": "l2_evict_first_streaming", "oracle": "maxnreg_32"}}]}
    (tmp_path / "picks.json").write_text(json.dumps(picks))
    monkeypatch.setattr(heldout, "open_backend", lambda args, cfg: GpuBackend(
        store, MeasureConfig(watchdog_s=20), ptxas=str(ptxas), worker_argv=(sys.executable, fake, "ok")))
    out = tmp_path / "gpu.json"
    argv = ["--params", str(ROOT / "params.yaml"), "--picks", str(tmp_path / "picks.json"), "--out", str(out)]
    assert heldout.main(argv) == 0
    row = json.loads(out.read_text())["kernels"][0]["side_by_side"]
    assert set(row["verdict"]) == {"l2_evict_last_streaming", "maxnreg_32", "l2_evict_first_streaming"}
    assert row["gain"]["bc"] == 0.0  # stop: nothing timed, nothing deployed
    assert row["gain"]["beam"] == max(row["gain"]["policy"], row["gain"]["oracle"])
    monkeypatch.undo()
    from chronos.config import load
    from chronos.measure.backend import ReplayBackend

    cfg = load(ROOT / "params.yaml")
    specs = {s.kernel: (sj, s) for _, sj, s in kernels_of(ROOT / "data/kernels", ["triton_llm"])}
    again = json.loads(json.dumps(picks))
    with ReplayBackend(store, cfg.measure) as replay:
        heldout_lib.side_by_side(again["kernels"], specs, replay, cfg)
    assert again["kernels"][0]["side_by_side"]["gain"] == row["gain"]


def test_held_out_scores_without_l2_evict_last_count_those_picks_as_the_baseline():
    import math

    from tests.benchmark_module import load_script

    bench = load_script("experiments/learning/heldout_without_l2_last.py")
    row = {"actions": {"policy": "l2_evict_last_reread", "beam": ["l2_evict_last_reread", "occ_ctas_2"],
                       "bc": "occ_ctas_2", "fixed": "l2_evict_last_streaming",
                       "oracle": "l2_evict_last_reread"},
           "side_by_side": {"ratio": {"l2_evict_last_reread": 0.95, "occ_ctas_2": 0.98,
                                      "l2_evict_last_streaming": 0.99},
                            "verdict": {"l2_evict_last_reread": "faster", "occ_ctas_2": "faster",
                                        "l2_evict_last_streaming": "no_difference"}}}
    got = bench.without_l2_last(row)
    assert got["policy"] == got["fixed"] == got["oracle"] == 0.0
    assert got["beam"] == got["bc"] == -math.log(0.98)  # the beam's best pick without the hint


def test_the_record_s_picks_are_scored_and_this_run_s_kept_beside_them():
    from chronos.actions import V2
    from tests.rl.test_onestep import A, B, C, _kernel

    d = _kernel(0, True)  # A faster (0.9), B no difference, C slower
    mine = {"policy": B, "beam": [B, C], "bc": B, "fixed": A, "oracle": A, "fixed_beam": [A, B]}
    rows = [{"kernel": d.kernel, "actions": dict(mine), "gain": {m: 0.0 for m in mine}},
            {"kernel": "not in the record", "actions": {}, "gain": {}}]
    record = {d.kernel: {"policy": A, "beam": [A, B], "bc": B, "fixed": A, "oracle": A}}
    assert heldout_lib.apply_record(rows, [d], V2, record) == [d.kernel]
    r = rows[0]
    assert r["actions"]["policy"] == A and r["gain"]["policy"] == r["gain"]["beam"] == -math.log(0.9)
    assert r["gain"]["bc"] == 0.0 and r["actions"]["fixed_beam"] == [A, B]  # a method the record lacks stays
    assert r["retrained"]["actions"] == mine and rows[1] == {"kernel": "not in the record", "actions": {},
                                                             "gain": {}}
    same = [{"kernel": d.kernel, "actions": dict(record[d.kernel]), "gain": {}}]
    assert heldout_lib.apply_record(same, [d], V2, record) == []


def test_the_seed_space_chooses_among_the_seed_s_actions_of_the_same_census(tmp_path):
    from chronos.actions import SEED

    params = tmp_path / "params.yaml"
    text = (ROOT / "params.yaml").read_text()
    params.write_text(text.replace("bc_epochs: 200", "bc_epochs: 5").replace("epochs: 1500", "epochs: 3")
                      .replace("fixed_beam: 3", "fixed_beam: 2").replace("  space: v2 ", "  space: seed ")
                      .replace("select_stops: [0, 150, 500, 1500]", "select_stops: [0, 3]")
                      .replace("select_bc_epochs: [50, 200]", "select_bc_epochs: [5]"))
    out = tmp_path / "heldout.json"
    assert heldout.main(["--params", str(params), "--census", str(ROOT / "data/headroom"), "--out", str(out),
                         "--curves", str(tmp_path / "c.csv")]) == 0
    rep = json.loads(out.read_text())
    assert rep["params"]["space"] == "seed"
    for r in rep["kernels"]:
        assert set(heldout_lib.distinct_picks(r["actions"])) <= set(SEED.names)
        part = next((ROOT / "data/headroom").glob(f"**/{r['kernel']}.json"))
        cands = json.loads(part.read_text())["trace"][0]["candidates"]
        seed_best = max([-math.log(c["ratio"]) for c in cands if c.get("valid") and c.get("ratio")
                         and c.get("verdict") == "faster" and c["action"] in SEED.names] + [0.0])
        assert math.isclose(r["gain"]["oracle"], seed_best)  # the seed's oracle, not v2's


def test_a_record_holds_its_picks_per_space():
    rec = {"kernels": {"k": {"policy": "cache_cs"}},
           "spaces": {"seed": {"kernels": {"k": {"policy": "vec_ld"}}}}}
    assert heldout_lib.record_kernels(rec, "v2") == rec["kernels"]
    assert heldout_lib.record_kernels(rec, "seed") == {"k": {"policy": "vec_ld"}}
    assert heldout_lib.record_kernels({"kernels": {}, "space": "seed"}, "v2") == {}
