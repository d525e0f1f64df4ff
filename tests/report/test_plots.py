"""reports/figures/triton_results.png: one panel per tier, written deterministically."""

from chronos.report.plots import triton_bars
from tests.report.triton_fixtures import evaluate_report, search_report


def test_triton_bars_is_deterministic(tmp_path):
    a = triton_bars(evaluate_report(), search_report(), tmp_path / "a" / "triton_results.png")
    b = triton_bars(evaluate_report(), search_report(), tmp_path / "b" / "triton_results.png")
    assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and a.read_bytes() == b.read_bytes()


def test_triton_bars_with_one_report_or_one_tier(tmp_path):
    ev = evaluate_report()
    del ev["tiers"]["triton_llm"]
    for i, (evaluate, search) in enumerate([(ev, None), (None, search_report()), (ev, search_report())]):
        out = triton_bars(evaluate, search, tmp_path / f"{i}.png")
        assert out.stat().st_size > 10_000
