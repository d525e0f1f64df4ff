"""Stage `report` on a copy of the committed reports: byte-identical outputs, one-line errors on bad input."""

import shutil
from pathlib import Path

import pytest

from chronos.stages import report

ROOT = Path(__file__).resolve().parents[2]
R = ROOT / "reports"
OUTPUTS = ("README.md", "metrics.json", "search_gemm_tile.csv")
OPTIONAL = ("random_results.json", "oracle.json", "predictions.json", "training_result.json",
            "triton_search.json", "measure_triton_results.json", "confirm.json", "grpo_curves.csv")


@pytest.fixture
def reports(tmp_path) -> Path:
    """The committed inputs and outputs, without figures (so a failed run that wrote none is visible)."""
    out = tmp_path / "reports"
    shutil.copytree(R, out, ignore=shutil.ignore_patterns("h200_runs", "figures"))
    return out


def _run(reports: Path) -> int:
    return report.main(["--params", str(ROOT / "params.yaml"), "--reports", str(reports)])


def test_reproduces_the_committed_reports(reports):
    for name in OUTPUTS:
        (reports / name).unlink()
    assert _run(reports) == 0
    for name in OUTPUTS:
        assert (reports / name).read_bytes() == (R / name).read_bytes(), name
    for png in ("search_gemm_tile", "bc_curves", "grpo_curves", "triton_results"):
        assert (reports / "figures" / f"{png}.png").stat().st_size > 10_000, png


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


@pytest.mark.parametrize("name", ["greedy_results.json", "oracle.json", "confirm.json"])
def test_truncated_input(reports, capsys, name):
    (reports / name).write_bytes((R / name).read_bytes()[:100])
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
