"""The compile-knob census (#28): the committed H200 census replays from the store and chooses as recorded;
each knob variant runs with its own geometry; a kernel without usable variants is a clear error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chronos.errors import ChronosError
from chronos.kernels.spec import load_specs
from chronos.search.knob_census import knob_summary, knob_variants
from chronos.stages import knob_census

ROOT = Path(__file__).resolve().parents[2]
FLEX = ROOT / "data" / "kernels" / "captured" / "flex"


def _flex_spec(prefix: str):
    return next(s for s in load_specs(FLEX / "specs.json") if s.kernel.startswith(prefix))


def test_the_committed_census_replays_as_recorded(tmp_path):
    out = tmp_path / "knob_census.json"
    rc = knob_census.main(["--params", str(ROOT / "params.yaml"), "--kernels", str(ROOT / "data/kernels"),
                           "--parts", str(ROOT / "data/knob_census"), "--backend", "replay",
                           "--store", str(ROOT / "data/store/measurements.sqlite"), "--out", str(out)])
    got, committed = json.loads(out.read_text()), json.loads((ROOT / "reports/knob_census.json").read_text())
    assert rc == 0 and got["disagreements"] == []
    assert got["summary"] == committed["summary"]
    measured = [r for r in got["kernels"] if "best" in r]
    assert measured and all(r["as_recorded"] for r in measured)
    for r in measured:  # a speedup is only ever a confirmed, bit-exact winner
        if r["speedup"] > 1:
            assert r["best"]["verdict"] == "faster" and r["best"]["ratio"] < 1
            won = next(c for c in r["candidates"] if [c["action"]] == r["best"]["actions"])
            assert won["valid"]


def test_a_knob_variant_runs_with_its_own_block_and_shared_memory():
    spec = _flex_spec("triton_tem_fused_flex_attention_0")
    variants, others = knob_variants(FLEX, spec)
    assert variants[0].actions == () and variants[0].launch is None
    entry = json.loads((FLEX / "knobs.json").read_text())["kernels"][spec.ptx]
    for v in variants[1:]:
        knob, value = v.actions[0].split("=")
        rec = next(x for x in entry["variants"] if x["knob"] == knob and x["value"] == int(value))
        assert v.launch.block == (32 * rec["num_warps"], 1, 1) and v.launch.shared_bytes == rec["shared"]
        assert f".reqntid {32 * rec['num_warps']}" in v.ptx  # the block the PTX itself requires
        assert v.key != v.ptx_sha256  # the geometry is part of the comparison's key
    labels = {v.actions[0] for v in variants[1:]} | {o["action"] for o in others}
    assert "num_warps=4" in labels and f"num_warps={entry['stock']['num_warps']}" not in labels


def test_a_capture_without_knob_variants_is_an_error_naming_the_kernel(tmp_path):
    spec = _flex_spec("triton_poi_fused_ones")
    folder = tmp_path / "flex"
    shutil.copytree(FLEX, folder, ignore=shutil.ignore_patterns("knobs", "ttir", "tune-parts"))
    manifest = json.loads((folder / "knobs.json").read_text())
    manifest["kernels"][spec.ptx]["remade_stock"] = False
    (folder / "knobs.json").write_text(json.dumps(manifest))
    with pytest.raises(ChronosError, match=r"triton_poi_fused_ones.*did not remake the stock PTX"):
        knob_variants(folder, spec)
    (folder / "knobs.json").unlink()
    with pytest.raises(ChronosError, match=r"triton_poi_fused_ones.*make_knob_variants"):
        knob_variants(folder, spec)


def test_the_summary_counts_exact_and_faster_per_knob():
    rows = [{"kernel": "a", "speedup": 1.21, "best": {"verdict": "faster"}, "candidates": [
                {"action": "num_warps=4", "valid": True, "verdict": "faster"},
                {"action": "num_warps=8", "valid": False, "reason": "mismatch",
                 "verdict": "invalid:mismatch"},
                {"action": "num_stages=2", "valid": False, "reason": "same_as_stock"}]},
            {"kernel": "b", "speedup": 1.0, "best": {"verdict": "none"}, "candidates": [
                {"action": "maxnreg=128", "valid": True, "verdict": "even"}]},
            {"kernel": "c", "error": "skipped: float atomics"}]
    s = knob_summary(rows)
    assert (s["kernels"], s["measured"], s["faster"]) == (3, 2, 1)
    assert s["time_geomean"] == pytest.approx(1.1)
    assert s["knobs"]["num_warps"] == {"variant": 2, "exact": 1, "faster": 1, "exact_share": 0.5}
    assert s["knobs"]["num_stages"]["variant"] == 0 and s["knobs"]["num_stages"]["exact_share"] is None
    assert s["exact_share"] == pytest.approx(2 / 3)


def test_a_gpu_run_takes_recorded_kernels_as_recorded_and_measures_the_new_ones(tmp_path, capsys):
    from types import SimpleNamespace

    from chronos.search.knob_census import census_family
    old, new = SimpleNamespace(kernel="old_kernel"), SimpleNamespace(kernel="new_kernel")
    part = tmp_path / "captured/x" / "old_kernel.json"
    part.parent.mkdir(parents=True)
    part.write_text(json.dumps({"kernel": "old_kernel", "speedup": 1.1, "best": {"actions": ["a"]},
                                "provenance": {"gpu": "H200"}}))
    measured = []

    def measure(spec):
        measured.append(spec.kernel)
        return {"kernel": spec.kernel, "speedup": 1.2, "best": {"actions": ["b"]}}

    def run(remeasure):
        return census_family("captured/x", [(0, old), (1, new)], measure, tmp_path, False, lambda: False,
                             lambda: {"gpu": "H100"}, remeasure=remeasure)

    rows = run(remeasure=False)
    assert measured == ["new_kernel"]
    assert "old_kernel" in capsys.readouterr().out.split("(its part, as recorded)")[0]  # said, not silent
    assert rows[0] == {"family": "captured/x", "kernel": "old_kernel", "speedup": 1.1,
                       "best": {"actions": ["a"]}, "from_part": True}
    prov = json.loads((tmp_path / "captured/x/new_kernel.json").read_text())["provenance"]
    assert prov["gpu"] == "H100" and set(prov) == {"gpu", "recorded_at"}
    measured.clear()
    rows = run(remeasure=True)  # both recorded now: timed again, each compared with its record
    assert measured == ["old_kernel", "new_kernel"]
    assert [r["as_recorded"] for r in rows] == [False, True]
