"""scripts/make_walk_roots.py's manifest on this CPU: a second run keeps every kernel walk.json already roots
(with the configs the walk compiled for it, which replay reads) and adds only the new ones, each marked with
the run that rooted it; --refresh's empty `kept` writes the new entries alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch._inductor.runtime.triton_heuristics")

from tests.benchmark_module import load_script

ROOT = Path(__file__).resolve().parents[1]


def _script():
    sys.path.insert(0, str(ROOT / "scripts"))  # it imports its sibling scripts
    return load_script("scripts/make_walk_roots.py")


def test_a_second_run_keeps_recorded_roots_and_their_configs(tmp_path):
    mod = _script()
    assert mod.recorded(tmp_path) == {}  # no manifest yet: nothing kept
    first = {"a.ptx": {"stock": {"XBLOCK": 64}, "configs": {"XBLOCK=128": {"ptx": "walk/a/x.ptx.gz"}}}}
    mod.write_manifest(tmp_path, {"date": "d1"}, {}, first)
    kept = mod.recorded(tmp_path)
    assert kept == first
    added = {"b.ptx": {"stock": {}, "configs": {}, "rooted": "d2"}}
    mod.write_manifest(tmp_path, {"date": "d2"}, kept, added)
    m = json.loads((tmp_path / "walk.json").read_text())
    assert m["kernels"]["a.ptx"]["configs"] == {"XBLOCK=128": {"ptx": "walk/a/x.ptx.gz"}}
    assert set(m["kernels"]) == {"a.ptx", "b.ptx"}
    assert m["provenance"] == {"date": "d1"} and m["provenance_added"] == [{"date": "d2"}]


def test_refresh_writes_the_new_entries_alone(tmp_path):
    mod = _script()
    mod.write_manifest(tmp_path, {"date": "d1"}, {}, {"a.ptx": {"configs": {"k": {}}}})
    mod.write_manifest(tmp_path, {"date": "d2"}, {}, {"a.ptx": {"configs": {}}})
    m = json.loads((tmp_path / "walk.json").read_text())
    assert m == {"provenance": {"date": "d2"}, "kernels": {"a.ptx": {"configs": {}}}}
