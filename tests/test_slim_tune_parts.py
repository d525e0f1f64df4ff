"""scripts/slim_tune_parts.py on a copy of a committed workload: the parts shrink, the kernel times the
knob stages' selection weighs (and so the selection) stay the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from chronos.kernels.profile import measured_gpu_ms
from chronos.search.headroom import selected
from tests.benchmark_module import load_script

ROOT = Path(__file__).resolve().parents[1]


def _copy(tmp_path: Path, w: str) -> Path:
    dest = tmp_path / "captured" / w
    shutil.copytree(ROOT / "data/kernels/captured" / w, dest, ignore=shutil.ignore_patterns("inputs"))
    return dest


def test_slimmed_parts_keep_every_kernel_time_and_the_selection(tmp_path):
    mod = load_script("scripts/slim_tune_parts.py")
    folder = _copy(tmp_path, "bert")
    times = measured_gpu_ms(folder)
    picked = {s.ptx for _, s in selected(tmp_path, "captured/bert", 32, "profile+measured_time")}
    size = sum(p.stat().st_size for p in (folder / "tune-parts").glob("*.json"))
    assert mod.slim(folder) == len(list((folder / "tune-parts").glob("*.json")))
    assert measured_gpu_ms(folder) == times and len(times) > 40
    assert {s.ptx for _, s in selected(tmp_path, "captured/bert", 32, "profile+measured_time")} == picked
    rows = [json.loads(p.read_text()) for p in (folder / "tune-parts").glob("*.json")]
    assert all(set(r) <= {"kernel", "baseline_ms"} for r in rows)
    assert sum(p.stat().st_size for p in (folder / "tune-parts").glob("*.json")) < size / 10


def test_a_cut_that_would_lose_the_times_is_refused_and_undone(tmp_path, monkeypatch):
    mod = load_script("scripts/slim_tune_parts.py")
    folder = _copy(tmp_path, "bert")
    first = min((folder / "tune-parts").glob("*.json"))
    before = first.read_text()
    monkeypatch.setattr(mod, "part_stock_ms", lambda row: None)  # as the 2026-12-07d cut: no time kept
    try:
        mod.slim(folder)
    except mod.ChronosError as e:
        assert "would change the selection" in str(e)
    else:
        raise AssertionError("a cut that drops every kernel time must be refused")
    assert first.read_text() == before
