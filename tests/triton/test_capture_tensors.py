"""What capture records of a tensor's values: integer ranges over the tensor's own elements, never over
memory its strided span covers but it does not address (CPU torch tensors)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from chronos.triton.capture_tensors import tensor_desc, value_stats


def test_integer_ranges_ignore_the_span_the_view_skips():
    base = torch.full((4, 9), 4617084673133770122, dtype=torch.int64)  # garbage the view never reads
    base[:, 1:] = torch.arange(32).reshape(4, 8) - 1  # the shifted labels: -1 .. 30
    labels = base[:, 1:]
    d = tensor_desc(labels)
    assert d["elements"] == 35  # the span runs over skipped elements
    assert value_stats(labels, d) == {"min": -1, "max": 30}


def test_float_statistics_are_finite_only():
    x = torch.tensor([1.0, 3.0, float("inf")])
    s = value_stats(x, tensor_desc(x))
    assert s["finite"] == 2 and s["mean"] == 2.0 and s["min"] == 1.0
