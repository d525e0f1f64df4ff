"""Stage knob_shapes' measure (chronos.tuning.shape_confirm) on gpt2's committed parts: the variant shared by
the three shapes of `cat_split_transpose_view_1` is rebuilt as it was measured, judged again beside stock and
each shape's own winner; where it holds it stays (marked judged again), where it fails at one shape the next
variant stands and the part is stale; a confirming part never becomes a kernel's own winner."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from chronos.kernels.spec import load_specs
from chronos.tuning.config_db import latest_parts, winner_ptx
from chronos.tuning.rebuild import variant_of
from chronos.tuning.shape_confirm import (
    confirm_kernel,
    own_winners,
    shapes_summary,
    shared_variants,
    stale_confirmation,
)
from chronos.tuning.shapes import measured_rows, shared_ptx
from tests.search.stub_backend import StubBackend

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("knob_ptx", "knob_blocks", "knob_walk")


def _gpt2(tmp_path: Path):
    """A copy of gpt2's capture and DB stages' parts, an empty knob_shapes folder; its cat_split shapes."""
    folder = tmp_path / "gpt2"
    shutil.copytree(ROOT / "data/kernels/captured/gpt2", folder,
                    ignore=shutil.ignore_patterns("tune-parts", "ttir", "inputs"))
    stages = []
    for s in STAGES:
        shutil.copytree(ROOT / "data" / s / "captured/gpt2", tmp_path / s)
        stages.append(tmp_path / s)
    (tmp_path / "knob_shapes").mkdir()
    specs = {s.kernel: s for s in load_specs(folder / "specs.json")}
    folders = [*stages, tmp_path / "knob_shapes"]
    shapes = sorted(k for k in shared_variants(folder, folders) if "cat_split_transpose_view_1_26c644b6" in k)
    assert len(shapes) == 3  # a fourth launch of its source has another PTX
    return folder, folders, specs, shapes


def _judge(folder, folders, specs, shapes, ratios: dict) -> dict[str, dict]:
    """Each shape judged with StubBackend(ratios[shape]), its part written into knob_shapes."""
    variants, owns, rows = shared_variants(folder, folders), own_winners(folders[:3]), {}
    for k in shapes:
        rows[k] = row = confirm_kernel(specs[k], folder, variants[k], owns.get(k),
                                       StubBackend(ratios[k]), timing=None, min_gain=0.01)
        (folders[-1] / f"{k}.json").write_text(json.dumps(row))
    return rows


def test_the_shared_variant_is_rebuilt_as_the_db_deploys_it_with_its_own_launch(tmp_path):
    folder, folders, specs, shapes = _gpt2(tmp_path)
    variants = {k: v for k, v in shared_variants(folder, folders).items() if k in shapes}
    assert len(set(variants.values())) == 1
    label = variants[shapes[0]]
    for k in shapes:
        v = variant_of(folder, specs[k], label.split("+"))
        assert v.actions == tuple(label.split("+")) and v.launch is not None  # num_warps=2: 64 threads
        assert v.launch.block[0] == 64 and v.ptx == winner_ptx(folder, specs[k], label.split("+"))[1]


def test_a_shared_variant_that_holds_at_every_shape_stays_and_is_marked_judged_again(tmp_path):
    folder, folders, specs, shapes = _gpt2(tmp_path)
    label = shared_variants(folder, folders)[shapes[0]]
    rows = _judge(folder, folders, specs, shapes, {key: {label: 0.6} for key in shapes})
    for k, row in rows.items():
        assert row["confirms"] == label and row["best"]["actions"] == label.split("+")
        assert row["candidates"][0]["action"] == label and abs(row["speedup"] - 1 / 0.6) < 1e-9
        own = own_winners(folders[:3]).get(k)
        assert [c["action"] for c in row["candidates"][1:]] == (["+".join(own)] if own and
                                                                 "+".join(own) != label else [])
    assert {k: shared_variants(folder, folders)[k] for k in shapes} == dict.fromkeys(shapes, label)
    assert not any(p.parent.name == "knob_shapes" for p in latest_parts(folders))  # never a kernel's winner
    specs_raw = {s["kernel"]: s for s in json.loads((folder / "specs.json").read_text())}
    rows_latest = [(p, json.loads(p.read_text())) for p in latest_parts(folders)]
    stand_ins = shared_ptx(rows_latest, specs_raw, measured_rows(folders))[2]
    shapes_of = next(p["shapes"] for p in stand_ins.values() if shapes[0] in p["shapes"])
    assert all(s["confirmed"] for s in shapes_of.values())
    assert max(s["ratio"] for s in shapes_of.values()) >= 0.6  # the least gain counts the new measurement
    s = shapes_summary(list(rows.values()))
    assert s["measured"] == s["faster"] == 3 and abs(s["time_geomean"] - 1 / 0.6) < 1e-9


def test_a_shared_variant_not_faster_at_one_shape_gives_way_and_its_parts_are_stale(tmp_path):
    folder, folders, specs, shapes = _gpt2(tmp_path)
    label = shared_variants(folder, folders)[shapes[0]]
    ratios = {**{key: {label: 0.6} for key in shapes}, shapes[1]: {label: 1.0}}
    rows = _judge(folder, folders, specs, shapes, ratios)
    assert rows[shapes[1]]["best"]["verdict"] == "none" and rows[shapes[1]]["speedup"] == 1.0
    now = shared_variants(folder, folders)
    assert label not in now.values()
    for k in shapes:
        why = stale_confirmation(json.loads((folders[-1] / f"{k}.json").read_text()), now.get(k))
        assert (why is not None) == (k in now)


def test_a_shape_whose_own_winner_cannot_be_rebuilt_still_judges_the_shared_variant(tmp_path):
    folder, folders, specs, shapes = _gpt2(tmp_path)
    label = shared_variants(folder, folders)[shapes[0]]
    row = confirm_kernel(specs[shapes[0]], folder, label, ["XBLOCK=999999"], StubBackend({label: 0.6}),
                         timing=None, min_gain=0.01)
    assert [c["action"] for c in row["candidates"]] == [label] and row["best"]["actions"] == label.split("+")
    assert "its own winner XBLOCK=999999 not rebuilt" in row["own_not_timed"]
