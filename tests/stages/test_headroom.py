"""Stage `headroom`: greedy in time over the v2 space on real kernels (a stand-in comparison backend), the
per-kernel report (roofline fraction, gain family, each family's best single action), the kernel choice,
and replay: a kernel never measured is reported, not invented."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.actions import V2
from chronos.config import GreedySearchConfig, TimingConfig
from chronos.kernels.spec import load_module
from chronos.search import headroom as headroom_lib
from chronos.search.runs import kernels_of
from chronos.search.timed import TimedEvaluator, greedy_in_time
from chronos.stages import headroom, timed_sections
from tests.search.test_timed import EFFECT, CompareStandIn

ROOT = Path(__file__).resolve().parents[2]


def _search(monkeypatch, name="add_relu_f32_n1000003_nodiv"):
    monkeypatch.setitem(EFFECT, "l1_evict_first_streaming", 0.8)  # a v2 action: only v2 can find it
    _, sj, spec = next(kernels_of(ROOT / "data/kernels", ["triton"], name))
    ev = TimedEvaluator(spec, load_module(sj, spec), CompareStandIn(), TimingConfig(), 0.005)
    return spec, greedy_in_time(ev, GreedySearchConfig(), V2).to_json()


def test_the_v2_search_finds_a_v2_action_and_the_row_names_its_family(monkeypatch):
    spec, search = _search(monkeypatch)
    assert search["best"]["actions"][0] == "l1_evict_first_streaming"
    assert len(search["trace"][0]["candidates"]) > 21  # v2's legal actions, not the seed's
    row = headroom_lib.kernel_row("triton", spec, search, V2, 4800.0)
    assert row["gain_family"] == "l1_eviction_streaming"
    assert row["families"]["l1_eviction_streaming"]["verdict"] == "faster"
    assert row["families"]["load_cache_hint"]["action"] == "cache_cs"  # cache_cs beats cache_cg (0.90)
    expect = headroom_lib.bytes_moved(spec) / (search["baseline"]["time_ms"] * 1e-3) / 4.8e12
    assert row["roofline_fraction"] == expect and row["speedup"] > 1.2
    s = headroom_lib.summary([row, {"family": "triton", "kernel": "x", "error": "not_measured"}])
    assert s["kernels"] == 2 and s["measured"] == 1 and s["faster"] == 1
    assert s["gain_families"] == {"l1_eviction_streaming": 1}
    assert s["single_action_faster"]["load_cache_hint"]["kernels"] == 1


def test_bytes_moved_counts_in_place_buffers_twice():
    _, _, spec = next(kernels_of(ROOT / "data/kernels", ["triton"], "add_relu_f32_n1000003_nodiv"))
    assert headroom_lib.bytes_moved(spec) == sum(a.nbytes * (2 if a.role == "inout" else 1)
                                             for a in spec.args if a.kind == "buffer") > 0


def test_selection_takes_one_signature_per_entry_most_gpu_time_first():
    picked = headroom_lib.selected(ROOT / "data/kernels", "captured/llama", 4)
    entries = [s.entry for _, s in picked]
    assert len(picked) == 4 and len(set(entries)) == 4
    # no profile: spread over the suite
    spread = headroom_lib.selected(ROOT / "data/kernels", "triton_llm", 4)
    assert len({s.kernel.split("_")[0] for _, s in spread}) == 4


def test_selection_once_per_ptx_keeps_each_shape_a_name_was_compiled_for():
    kernels, family = ROOT / "data/kernels", "captured/flex_decode_long"
    by_entry = headroom_lib.selected(kernels, family, 28)
    by_ptx = headroom_lib.selected(kernels, family, 28, once_per="ptx")
    template = "triton_tem_fused_flex_attention_0"  # the windowed decode template, batch 1, 2, 4 and 8
    assert sum(s.entry == template for _, s in by_entry) == 1
    assert sum(s.entry == template for _, s in by_ptx) == 4
    assert len({s.ptx for _, s in by_ptx}) == len(by_ptx) == 28


def test_selection_once_per_ptx_begins_with_the_entry_selection():
    # a cap keeps every kernel the entry selection took, then the other shapes; a full cap, the same list
    kernels = ROOT / "data/kernels"
    for family, cap in [("captured/flex_decode_long", 20), ("captured/llama", 24)]:
        by_entry = headroom_lib.selected(kernels, family, cap)
        by_ptx = headroom_lib.selected(kernels, family, cap, once_per="ptx")
        assert by_ptx[:len(by_entry)] == by_entry and len(by_ptx) == cap
    assert len(headroom_lib.selected(kernels, "captured/flex_decode_long", 20)) == 14


def test_on_replay_a_kernel_without_a_part_is_not_measured(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text().replace("per_family: 24", "per_family: 1"))
    out = tmp_path / "headroom.json"
    argv = ["--params", str(params), "--kernels", str(ROOT / "data/kernels"), "--parts", str(tmp_path / "p"),
            "--out", str(out), "--backend", "replay", "--store", str(ROOT / "data/store/measurements.sqlite")]
    assert headroom.main(argv) == 0
    rep = json.loads(out.read_text())
    errors = {r["family"]: r["error"] for r in rep["kernels"]}
    assert errors.pop("captured/bert").startswith("skipped: float atomics (atom.global")  # as tune skips it
    assert [e[:12] for e in errors.values()] == ["not_measured"] * 4
    assert all(s["measured"] == 0 for s in rep["summary"].values())


def _fake_gpu_run(tmp_path, monkeypatch, ptxas, per_family: str, fewer: str) -> list[str]:
    """The stage's arguments for a run on captured/flex alone (`per_family` replaced by `fewer` in
    params.yaml) through the GPU backend with a fake worker (every contender valid, times from the cubin's
    hash) into a scratch store."""
    import sys

    from chronos.config import MeasureConfig
    from chronos.measure.backend import GpuBackend

    fake = str(ROOT / "tests/measure/fake_worker.py")
    store = tmp_path / "m.sqlite"
    monkeypatch.setattr(timed_sections, "open_backend", lambda args, cfg: GpuBackend(
        store, MeasureConfig(watchdog_s=20), ptxas=str(ptxas), worker_argv=(sys.executable, fake, "ok")))
    params = tmp_path / "params.yaml"
    text = (ROOT / "params.yaml").read_text().replace(per_family, fewer)
    params.write_text(text.replace("captured/llama, captured/gpt2, captured/bert, captured/flex, triton_llm",
                                   "captured/flex"))
    return ["--params", str(params), "--kernels", str(ROOT / "data/kernels"), "--parts", str(tmp_path / "p"),
            "--store", str(store)]


def test_a_gpu_run_writes_parts_that_replay_as_recorded(tmp_path, monkeypatch, ptxas):
    """Through the GPU backend (fake worker: every contender valid, times from the cubin's hash) into a
    scratch store, then replayed from it: the same sets, no disagreement."""
    argv = _fake_gpu_run(tmp_path, monkeypatch, ptxas, "per_family: 24", "per_family: 1")
    assert headroom.main([*argv, "--out", str(tmp_path / "gpu.json")]) == 0
    parts = list((tmp_path / "p/captured/flex").glob("*.json"))
    assert len(parts) == 1 and json.loads(parts[0].read_text())["provenance"]["gpu"] == "FakeGPU"
    monkeypatch.undo()
    assert headroom.main([*argv, "--out", str(tmp_path / "replay.json"), "--backend", "replay"]) == 0
    gpu, rep = (json.loads((tmp_path / f).read_text()) for f in ("gpu.json", "replay.json"))
    assert rep["kernels"][0]["as_recorded"] is True and rep["disagreements"] == []
    assert sorted(p.name for p in tmp_path.glob("m.sqlite*")) == ["m.sqlite"]  # closed: no -wal/-shm left
    assert {k: v for k, v in rep["kernels"][0].items() if k != "as_recorded"} == gpu["kernels"][0]


def test_the_report_takes_the_measured_families_and_lists_every_measured_kernel(monkeypatch):
    from chronos.report.readme import headroom_section
    from chronos.report.tables import headroom_metrics

    spec, search = _search(monkeypatch)
    row = headroom_lib.kernel_row("captured/llama", spec, search, V2, 4800.0)
    rep = {"params": {"space": "v2"}, "kernels": [row, {"family": "triton_llm", "kernel": "y", "error": "x"}],
           "summary": {"captured/llama": headroom_lib.summary([row]), "triton_llm": headroom_lib.summary([])}}
    assert headroom_metrics(rep) == {"v2": {"headroom": {"llama": {"measured": 1, "faster": 1,
                                                                    "time_geomean": row["speedup"]}}}}
    lines = headroom_section(rep)
    assert lines[0].startswith("## Where is the headroom (v2")
    assert len([x for x in lines if "| captured/" in x]) == 1
    assert "l1_evict_first_streaming" in lines[4] and headroom_section(None) == []


def test_the_census_section_measures_step_0_alone_and_replays_it(tmp_path, monkeypatch, ptxas):
    argv = _fake_gpu_run(tmp_path, monkeypatch, ptxas, "per_family: 24", "per_family: 2")
    argv += ["--section", "census"]
    assert headroom.main([*argv, "--out", str(tmp_path / "gpu.json")]) == 0
    parts = sorted((tmp_path / "p/captured/flex").glob("*.json"))
    assert len(parts) == 2
    for p in parts:  # one step: the baseline and every legal single action in one comparison, and the
        search = json.loads(p.read_text())  # step's winner judged again beside the baseline alone
        assert len(search["trace"]) == 1
        assert search["comparisons"] == (1 if search["trace"][0]["chosen"] == "stop" else 2)
        assert search["trace"][0]["candidates"] and all(
            len(c["actions"]) == 1 for c in search["trace"][0]["candidates"] if c.get("valid"))
    monkeypatch.undo()
    from chronos.stages import census  # the stage's own module: headroom with --section census

    assert census.main([*argv[:-2], "--out", str(tmp_path / "replay.json"), "--backend", "replay"]) == 0
    rep = json.loads((tmp_path / "replay.json").read_text())
    assert rep["params"]["max_steps"] == 1 and rep["disagreements"] == []
    assert all(r["as_recorded"] for r in rep["kernels"])
