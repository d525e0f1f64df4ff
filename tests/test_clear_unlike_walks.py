"""scripts/clear_unlike_walks.py on a copy of the committed bert data: no confirmed winner puts PTX actions
on a walk config compiled unlike stock any more (2026-12-07 cleared those); with --all it finds the kernels
with any such config, drops their compiled configs (PTX files too; the root stays) and the knob_walk parts
of their PTX, and nothing else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.benchmark_module import load_script

ROOT = Path(__file__).resolve().parents[1]


def _copy(tmp_path: Path, w: str) -> Path:
    for sub in (f"data/kernels/captured/{w}", *(f"data/{s}/captured/{w}" for s in
                                              ("knob_ptx", "knob_blocks", "knob_walk"))):
        shutil.copytree(ROOT / sub, tmp_path / sub, ignore=shutil.ignore_patterns("tune-parts", "inputs"))
    return tmp_path


def test_the_walks_compiled_unlike_stock_are_cleared_and_nothing_else(tmp_path):
    mod = load_script("scripts/clear_unlike_walks.py")
    root = _copy(tmp_path, "bert")
    assert mod.stems_to_clear(root, "bert", everything=False) == {}  # the DB leaves no winner out for it
    stems = mod.stems_to_clear(root, "bert", everything=True)
    assert stems and all(stems.values())
    walk = root / "data/kernels/captured/bert"
    before = json.loads((walk / "walk.json").read_text())["kernels"]
    parts_before = sorted(p.name for p in (root / "data/knob_walk/captured/bert").glob("*.json"))
    removed = mod.clear(root, "bert", stems)
    after = json.loads((walk / "walk.json").read_text())["kernels"]
    assert {p.name.rsplit("_", 1)[0] for p in removed} == set(stems)
    for ptx, entry in after.items():
        if entry.get("stem") in stems:
            assert entry["configs"] == {} and entry["module"] == before[ptx]["module"]
            assert not any((walk / c["ptx"]).exists() for c in before[ptx]["configs"].values())
        else:
            assert entry == before[ptx]
    left = sorted(p.name for p in (root / "data/knob_walk/captured/bert").glob("*.json"))
    assert left == sorted(set(parts_before) - {p.name for p in removed})
    assert mod.stems_to_clear(root, "bert", everything=True) == {}  # a second run finds nothing
