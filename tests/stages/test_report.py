"""Stage `report` on a copy of the committed reports with the Triton reports in their wall-time formats: the
gemm_tile outputs byte-identical, the Triton tiers and the A/A test nested in metrics.json and led by wall
time in the README, one-line errors on bad input, absent optional inputs skipped."""

import json
import math
import shutil
from pathlib import Path

import pytest

from chronos.stages import report
from tests.report.triton_fixtures import write_all

ROOT = Path(__file__).resolve().parents[2]
R = ROOT / "reports"
TRITON = ("triton_search.json", "measure_triton_results.json", "aa.json")
OPTIONAL = ("random_results.json", "oracle.json", "predictions.json", "training_result.json",
            "confirm.json", "grpo_curves.csv", "heldout.json", "heldout_curves.csv", "census.json", *TRITON)


@pytest.fixture
def reports(tmp_path) -> Path:
    """The committed inputs and outputs, without figures (so a failed run that wrote none is visible), with
    the Triton reports replaced by small ones in the new formats."""
    out = tmp_path / "reports"
    shutil.copytree(R, out, ignore=shutil.ignore_patterns("h200_runs", "figures"))
    write_all(out)
    return out


def _run(reports: Path) -> int:
    return report.main(["--params", str(ROOT / "params.yaml"), "--reports", str(reports)])


def _sections(readme: str) -> dict[str, str]:
    """README sections by heading (the header block under '')."""
    parts = ("\n" + readme).split("\n## ")
    return {"": parts[0], **{p.split("\n", 1)[0]: p for p in parts[1:]}}


def _gemm_metrics(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if not k.startswith(("triton", "aa"))}


def _same_numbers(ours, theirs, where: str = "metrics") -> None:
    """Equal structure and values; floats to 1e-12 relative (a numpy release may round a mean's last bit
    differently: 0.9751094595839279 against ...81 after a fresh install, same inputs)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and ours.keys() == theirs.keys(), where
        for k in theirs:
            _same_numbers(ours[k], theirs[k], f"{where}.{k}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _same_numbers(a, b, f"{where}[{i}]")
    elif isinstance(theirs, float) and isinstance(ours, float):
        assert math.isclose(ours, theirs, rel_tol=1e-12), (where, ours, theirs)
    else:
        assert ours == theirs, where


def test_gemm_tile_outputs_stay_byte_identical(reports):
    committed_readme = (R / "README.md").read_text()
    committed_metrics = json.loads((R / "metrics.json").read_text())
    for name in ("README.md", "metrics.json", "search_gemm_tile.csv"):
        (reports / name).unlink()
    assert _run(reports) == 0
    assert (reports / "search_gemm_tile.csv").read_bytes() == (R / "search_gemm_tile.csv").read_bytes()
    ours = _sections((reports / "README.md").read_text())
    theirs = _sections(committed_readme)
    for heading in [h for h in theirs if not h.startswith("Triton")]:
        assert ours[heading] == theirs[heading], heading
    metrics = json.loads((reports / "metrics.json").read_text())
    _same_numbers(_gemm_metrics(metrics), _gemm_metrics(committed_metrics))
    for png in ("search_gemm_tile", "bc_curves", "grpo_curves", "triton_results"):
        assert (reports / "figures" / f"{png}.png").stat().st_size > 10_000, png


def test_triton_metrics_are_nested_per_tier(reports):
    assert _run(reports) == 0
    metrics = json.loads((reports / "metrics.json").read_text())
    assert not any(k.startswith("triton_") for k in metrics)  # the old flat keys are gone
    assert metrics["aa"] == {"decisions": 16, "false_faster": 0.0625, "false_slower": 0.0}
    small, llm = metrics["triton"]["small"], metrics["triton"]["llm"]
    assert set(metrics["triton"]) == {"small", "llm"}
    assert {k: small[k] for k in ("faster", "slower", "wrong", "measured", "kernels")} == {
        "faster": 1, "slower": 0, "wrong": 3, "measured": 3, "kernels": 4}
    assert small["time_geomean"] == pytest.approx(1.25 ** (1 / 3))
    assert small["greedy_time_geomean"] == pytest.approx(1.25 ** 0.5)
    assert (small["greedy_faster"], small["greedy_wrong"]) == (1, 1)
    assert small["roofline_median"] == pytest.approx(0.5)  # median of 0.5, 0.3 and max(0.2, 0.7)
    assert llm["roofline_median"] == pytest.approx(0.8)
    assert llm["greedy_time_geomean"] == pytest.approx(1 / 0.9)


def test_readme_leads_the_triton_section_with_wall_time(reports):
    assert _run(reports) == 0
    section = _sections((reports / "README.md").read_text())["Triton suite (zero-shot, wall time)"]
    lines = section.splitlines()
    assert "| small (`triton`) | 3 of 4 | 1.077x | 1 / 0 / 3 | 1.118x | 1 | 50.0% |" in lines
    assert "| LLM sizes (`triton_llm`) | 1 of 1 | 1.000x | 0 / 0 / 1 | 1.111x | 1 | 80.0% |" in lines
    assert "side-by-side time ratio" in section and "99% bootstrap confidence interval" in section
    assert "faster only if the whole interval lies below 1 − min_gain = 0.995" in section
    assert "Greedy failed on 1 kernel(s)" in section
    assert ("A/A test (`aa.json`): 16 decisions, each a kernel's baseline against a copy of itself: "
            "6.25% called faster, 0.00% called slower") in section
    assert "cycle" not in section  # wall time only: the seed's %clock64 cycles are gemm_tile's


@pytest.mark.parametrize("gone", [("aa.json",), ("measure_triton_results.json",), ("triton_search.json",),
                                  ("measure_triton_results.json", "triton_search.json")])
def test_a_missing_triton_report_leaves_its_keys_out(reports, gone):
    for name in gone:
        (reports / name).unlink()
    assert _run(reports) == 0
    metrics = json.loads((reports / "metrics.json").read_text())
    text = (reports / "README.md").read_text()
    assert ("aa" in metrics) == ("aa.json" not in gone) and ("A/A test" in text) == ("aa.json" not in gone)
    tiers = metrics.get("triton", {})
    assert ("time_geomean" in tiers.get("small", {})) == ("measure_triton_results.json" not in gone)
    assert ("greedy_time_geomean" in tiers.get("small", {})) == ("triton_search.json" not in gone)
    either = not {"measure_triton_results.json", "triton_search.json"} <= set(gone)
    assert (reports / "figures" / "triton_results.png").is_file() == either
    assert "## Triton suite" in text


def test_old_format_triton_reports_do_not_break_the_report(reports):
    (reports / "triton_search.json").write_text(json.dumps({"summary": {}, "greedy": [], "random": []}))
    (reports / "measure_triton_results.json").write_text(json.dumps({"summary": {}, "kernels": []}))
    assert _run(reports) == 0
    assert "triton" not in json.loads((reports / "metrics.json").read_text())


def _one_line_error(capsys, name: str) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and name in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("name", ["baseline.json", "greedy_results.json", "bc_stats.json"])
def test_missing_required_input(reports, capsys, name):
    (reports / name).unlink()
    assert _run(reports) == 2
    assert "not found" in _one_line_error(capsys, name)
    assert not (reports / "figures").exists()  # every input is read before any output is written


@pytest.mark.parametrize("name", ["greedy_results.json", "oracle.json", "confirm.json", "aa.json",
                                  "measure_triton_results.json"])
def test_truncated_input(reports, capsys, name):
    (reports / name).write_bytes((reports / name).read_bytes()[:100])
    assert _run(reports) == 2
    assert "not valid JSON" in _one_line_error(capsys, name)
    assert (reports / "README.md").read_bytes() == (R / "README.md").read_bytes()


def test_absent_optional_inputs_are_skipped(reports):
    for name in OPTIONAL:
        (reports / name).unlink()
    assert _run(reports) == 0
    text = (reports / "README.md").read_text()
    assert "## Baseline" in text and "## Triton suite" not in text and "## Confirmed" not in text
    figures = sorted(p.name for p in (reports / "figures").iterdir())
    assert figures == ["bc_curves.png", "search_gemm_tile.png"]
    metrics = json.loads((reports / "metrics.json").read_text())
    assert "triton" not in metrics and "aa" not in metrics
