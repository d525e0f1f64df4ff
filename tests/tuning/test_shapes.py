"""One stock PTX at several shapes (chronos.tuning.shapes): agreeing winners share the first shape's entry;
differing winners deploy the config alone that every shape measured faster and bit-exact, else nothing."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from chronos.measure.numerics import WITHIN_TOLERANCE
from chronos.tuning.shapes import config_everywhere, measured_rows, shared_ptx

ROOT = Path(__file__).resolve().parents[2]


def _row(kernel, actions, candidates=()):
    return Path(kernel), {"kernel": kernel, "best": {"verdict": "faster" if actions else "none",
                                                     "actions": actions},
                          "candidates": [{"actions": actions, "valid": True, "reason": ""}, *candidates]}


def _alone(label, ratio, verdict="faster", reason=""):
    return {"action": label, "verdict": verdict, "ratio": ratio, "ci": [ratio - 0.01, ratio + 0.01],
            "valid": True, "reason": reason}


def test_one_ptx_at_several_shapes_deploys_only_where_every_measured_shape_chose_the_same_winner():
    specs = {k: {"ptx": p} for k, p in (("a1", "A"), ("a2", "A"), ("b1", "B"), ("b2", "B"), ("b3", "B"),
                                         ("c", "C"))}
    rows = [_row("a1", ["num_warps=4", "cache_ca"]), _row("a2", ["num_warps=4", "cache_ca"]),
            _row("b1", ["num_warps=4"]), _row("b2", ["num_warps=8"]), _row("b3", []), _row("c", ["cache_cg"])]
    disagree, served, stand_ins = shared_ptx(rows, specs)
    assert served == {"a2": "a1"} and stand_ins == {}
    assert set(disagree) == {"b1", "b2", "b3"} and "none deploys" in disagree["b3"]
    assert "num_warps=8" in disagree["b1"] and "b3: nothing" in disagree["b1"]


def test_differing_winners_deploy_the_config_alone_that_won_at_every_shape_the_least_gain_largest():
    measured = {
        "s1": [{"kernel": "s1", "candidates": [_alone("num_warps=2", 0.60), _alone("num_warps=4", 0.70),
                                               _alone("XBLOCK=512", 0.50), _alone("maxnreg=64", 0.40)]}],
        "s2": [{"kernel": "s2", "candidates": [_alone("num_warps=2", 0.80), _alone("num_warps=4", 0.75),
                                               _alone("maxnreg=64", 0.40)]},
               {"kernel": "s2", "provenance": {"gpu": "H"}, "blocks": [_alone("num_warps=2", 0.85),
                                                                       _alone("XBLOCK=512", 0.5)]}],
    }
    label, chosen = config_everywhere(["s1", "s2"], measured)
    # num_warps=4's slowest shape (0.75) beats num_warps=2's (its later measurement, 0.85); XBLOCK=512 was
    # measured at s2 in one part only, but at s1 too: it wins; maxnreg never deploys on Inductor's kernels
    assert label == "XBLOCK=512" and {k: c["ratio"] for k, (c, _) in chosen.items()} == {"s1": .5, "s2": .5}
    measured["s2"][1]["blocks"][1] = _alone("XBLOCK=512", 0.99, verdict="no_difference")
    assert config_everywhere(["s1", "s2"], measured)[0] == "num_warps=4"  # one measurement not faster
    measured["s1"][0]["candidates"][1] = _alone("num_warps=4", 0.7, reason=WITHIN_TOLERANCE)
    assert config_everywhere(["s1", "s2"], measured)[0] == "num_warps=2"  # one not bit-exact
    assert {k: c["ratio"] for k, (c, _) in config_everywhere(["s1", "s2"], measured)[1].items()} == {
        "s1": 0.6, "s2": 0.85}  # each shape's least gain
    assert config_everywhere(["s1", "s3"], measured) is None  # s3 measured nothing


def test_gpt2s_cat_split_at_three_shapes_deploys_num_warps_2_alone_and_berts_layer_norm_nothing(tmp_path):
    """gpt2's triton_poi_fused_cat_split_transpose_view_1 runs one stock PTX at three shapes whose winners
    differ (num_warps=2 with maxnreg_64, with st_l1_no_allocate, a walk's end): num_warps=2 alone won at
    each, so one config entry (the least gain's ratio, no PTX entry) serves all three. bert's
    add_native_dropout_native_layer_norm_view_4 at three shapes: one has no faster config, none deploys."""
    from chronos.triton.tuned_configs import config_entries
    from chronos.triton.tuned_db import TunedDB
    from chronos.tuning.config_db import DB_STAGES, latest_parts, write_configs

    got = {}
    for w in ("gpt2", "bert"):
        folder = tmp_path / w
        shutil.copytree(ROOT / "data/kernels/captured" / w, folder,
                        ignore=shutil.ignore_patterns("tune-parts", "ttir", "inputs"))
        identity = json.loads((folder / "triton.json").read_text())
        for name, item in identity.items():
            item["source_sha256"] = hashlib.sha256(name.encode()).hexdigest()
        (folder / "triton.json").write_text(json.dumps(identity))
        folders = [ROOT / "data" / s / "captured" / w for s in DB_STAGES]
        got[w] = write_configs(folder, latest_parts(folders), tmp_path / f"{w}.sqlite",
                               measured=measured_rows(folders))
    shared = got["gpt2"]["shared_config"]
    assert len(shared) == 3 and {s["config"] for s in shared.values()} == {"num_warps=2"}
    first, *others = sorted(shared)
    assert {k: got["gpt2"]["same_ptx"][k] for k in others} == dict.fromkeys(others, first)
    with TunedDB(tmp_path / "gpt2.sqlite", readonly=True) as db:
        entry = next(e for e in config_entries(db) if e.provenance["kernel"] == first)
        assert not [e for e in db.entries() if e.provenance["kernel"] in shared]  # no PTX on top
    assert entry.tuned.num_warps == 2 != entry.stock.num_warps and entry.stock.kwargs == entry.tuned.kwargs
    assert entry.ratio == max(s["ratio"] for s in shared.values()) < 0.6
    bert = {k: w for k, w in got["bert"]["left_out"].items() if "native_layer_norm_view_4_ec0efab5" in k}
    assert len(bert) == 3 and all("no config alone won at every shape" in w for w in bert.values())
    assert not got["bert"]["shared_config"]
