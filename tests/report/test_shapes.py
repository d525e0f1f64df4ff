"""reports/knob_shapes.json into metrics and the README (chronos.report.shapes): only the shapes that share a
variant count; judged, held and waiting are told apart."""

from __future__ import annotations

import pytest

from chronos.report.shapes import shapes_metrics, shapes_section
from chronos.tuning.shapes import NOT_SHARED


def _row(kernel, family="captured/gpt2", **row):
    return {"family": family, "kernel": kernel, **row}


def test_shapes_that_share_a_variant_are_counted_judged_held_and_waiting():
    report = {"provenance": {"gpu": "NVIDIA H100 80GB HBM3"}, "kernels": [
        _row("a", error=NOT_SHARED), _row("b", error="skipped: float atomics (atom.global.gpu.add.f32)"),
        _row("c", best={"verdict": "faster"}, speedup=1.5), _row("d", best={"verdict": "none"}, speedup=1.0),
        _row("e", error="not_measured (run this stage on a GPU)"),
        _row("f", error="stale part: judged x; the variant for its shapes is now y (run it on a GPU)"),
        _row("g", family="captured/bert", error=NOT_SHARED)]}
    metrics: dict = {}
    shapes_metrics(report, metrics)
    assert metrics["shapes"] == {"gpt2": {"shared": 4, "judged": 2, "held": 1, "waiting": 2,
                                          "time_geomean": pytest.approx(1.5 ** 0.5)}}
    lines = shapes_section(report, metrics)
    assert "(GPU: H100 80GB HBM3)" in lines[1] and lines[-1] == "| gpt2 | 4 | 2 | 1 | 1.2247× | 2 |"


def test_nothing_judged_yet_says_no_gpu_and_no_shared_shapes_say_nothing():
    metrics: dict = {}
    shapes_metrics({"provenance": {}, "kernels": [_row("e", error="not_measured (run this stage on a GPU)")]},
                   metrics)
    assert "(GPU: none yet)" in shapes_section({}, metrics)[1]
    empty: dict = {}
    shapes_metrics({"kernels": [_row("a", error=NOT_SHARED)]}, empty)
    assert empty == {} and shapes_section(None, empty) == []
