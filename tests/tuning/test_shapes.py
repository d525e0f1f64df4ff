"""One stock PTX at several shapes (chronos.tuning.shapes): agreeing winners share the first shape's entry;
differing winners deploy the one variant that every shape measured faster and bit-exact, else nothing."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from chronos.measure.numerics import WITHIN_TOLERANCE
from chronos.tuning.shapes import measured_rows, shared_ptx, variant_everywhere, variant_measurements

ROOT = Path(__file__).resolve().parents[2]


def _row(kernel, actions, candidates=()):
    return Path(kernel), {"kernel": kernel, "best": {"verdict": "faster" if actions else "none",
                                                     "actions": actions},
                          "candidates": [{"actions": actions, "valid": True, "reason": ""}, *candidates]}


def _timed(label, ratio, verdict="faster", reason=""):
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


def test_differing_winners_deploy_the_variant_that_won_at_every_shape_its_least_gain_largest():
    measured = {
        "s1": [{"kernel": "s1", "candidates": [_timed("num_warps=2", 0.60), _timed("num_warps=4", 0.70),
                                               _timed("XBLOCK=512", 0.50), _timed("maxnreg=64", 0.40),
                                               _timed("num_warps=2+reorder_cp", 0.58)]}],
        "s2": [{"kernel": "s2", "candidates": [_timed("num_warps=2", 0.80), _timed("num_warps=4", 0.75),
                                               _timed("maxnreg=64", 0.40),
                                               _timed("num_warps=2+reorder_cp", 0.7)]},
               {"kernel": "s2", "provenance": {"gpu": "H"}, "blocks": [_timed("num_warps=2", 0.85),
                                                                       _timed("XBLOCK=512", 0.5)]}],
    }
    label, chosen = variant_everywhere(["s1", "s2"], measured)
    # XBLOCK=512 was measured at s2 in one part, at s1 in another: its slowest shape (0.5) is the fastest
    # of all; maxnreg=64 (a knob Inductor's autotuner never passes to Triton) never deploys for shapes
    assert label == "XBLOCK=512" and {k: c["ratio"] for k, (c, _) in chosen.items()} == {"s1": .5, "s2": .5}
    measured["s2"][1]["blocks"][1] = _timed("XBLOCK=512", 0.99, verdict="no_difference")
    assert variant_everywhere(["s1", "s2"], measured)[0] == "num_warps=2+reorder_cp"  # one not faster
    measured["s1"][0]["candidates"][4] = _timed("num_warps=2+reorder_cp", 0.58, reason=WITHIN_TOLERANCE)
    assert variant_everywhere(["s1", "s2"], measured)[0] == "num_warps=4"  # one not bit-exact
    measured["s1"][0]["candidates"][1] = _timed("num_warps=4", 0.7, verdict="slower")
    label, chosen = variant_everywhere(["s1", "s2"], measured)
    assert label == "num_warps=2" and {k: c["ratio"] for k, (c, _) in chosen.items()} == {
        "s1": 0.6, "s2": 0.85}  # each shape's least gain of it
    assert variant_everywhere(["s1", "s3"], measured) is None  # s3 measured nothing


def test_a_walks_comparisons_beside_stock_count_and_its_steps_and_coordesc_rows_do_not():
    walk_end, coordesc = "walk:XBLOCK=32,num_warps=1,num_stages=1", "walk:XBLOCK=64,num_warps=2,num_stages=1"
    step = _timed("walk:XBLOCK=16,num_warps=1,num_stages=1", .5)  # its ratio is against the incumbent
    walked = {"kernel": "s1", "walk": [{"candidates": [step]}],
              "choosing": {"prior": _timed("num_warps=2", .8), "walk": _timed(walk_end, .7),
                           "coordesc": _timed("coordesc", .6)},
              "confirming": {"chronos": _timed(walk_end, .72), "on_coordesc": _timed(coordesc, .9)}}
    got = variant_measurements([walked])
    assert {k: [c["ratio"] for c, _ in v] for k, v in got.items()} == {"num_warps=2": [.8],
                                                                        walk_end: [.7, .72]}


def test_variants_tied_on_their_least_gain_resolve_by_label_not_by_set_order():
    labels = [f"num_warps={w}+{a}" for w in (2, 4) for a in ("st_cache_cs", "st_l1_evict_first", "cache_cg")]
    measured = {k: [{"kernel": k, "candidates": [_timed(label, 0.56) for label in reversed(labels)]}]
                for k in ("s1", "s2")}
    assert variant_everywhere(["s1", "s2"], measured)[0] == min(labels) == "num_warps=2+cache_cg"


def _db(tmp_path: Path, workload: str) -> dict:
    from chronos.tuning.config_db import DB_STAGES, latest_parts, write_configs

    folder = tmp_path / workload
    shutil.copytree(ROOT / "data/kernels/captured" / workload, folder,
                    ignore=shutil.ignore_patterns("tune-parts", "ttir", "inputs"))
    identity = json.loads((folder / "triton.json").read_text())
    for name, item in identity.items():
        item["source_sha256"] = hashlib.sha256(name.encode()).hexdigest()
    (folder / "triton.json").write_text(json.dumps(identity))
    folders = [ROOT / "data" / s / "captured" / workload for s in DB_STAGES]
    return write_configs(folder, latest_parts(folders), tmp_path / f"{workload}.sqlite",
                         measured=measured_rows(folders))


def test_gpt2s_cat_split_at_three_shapes_deploys_one_shared_variant_and_berts_layer_norm_nothing(tmp_path):
    """gpt2's triton_poi_fused_cat_split_transpose_view_1 runs one stock PTX at three shapes whose winners
    differ (num_warps=2 with maxnreg_64, with st_l1_no_allocate, a walk's end): one variant on num_warps=2
    won at each, so its config entry and its PTX entry (keyed by the config, the least gain's ratio) serve
    all three. bert's add_native_dropout_native_layer_norm_view_4 at three shapes: one has nothing faster."""
    from chronos.triton.tuned_configs import config_entries
    from chronos.triton.tuned_db import TunedDB
    from chronos.tuning.winners import split_winner

    got = {w: _db(tmp_path, w) for w in ("gpt2", "bert")}
    shared = got["gpt2"]["shared_variant"]
    assert len(shared) == 3 and len({s["variant"] for s in shared.values()}) == 1
    label, ptx_actions = split_winner(next(iter(shared.values()))["variant"].split("+"))
    assert label == "num_warps=2"
    first, *others = sorted(shared)
    assert {k: got["gpt2"]["same_ptx"][k] for k in others} == dict.fromkeys(others, first)
    worst = max(s["ratio"] for s in shared.values())
    with TunedDB(tmp_path / "gpt2.sqlite", readonly=True) as db:
        config = next(e for e in config_entries(db) if e.provenance["kernel"] == first)
        ptx = [e for e in db.entries() if e.provenance["kernel"] in shared]
    assert config.tuned.num_warps == 2 != config.stock.num_warps
    assert config.stock.kwargs == config.tuned.kwargs
    assert [(list(e.actions), e.verification["config"], e.ratio) for e in ptx] == (
        [(ptx_actions, label, worst)] if ptx_actions else [])
    assert config.ratio == worst < 0.6
    bert = {k: w for k, w in got["bert"]["left_out"].items() if "native_layer_norm_view_4_ec0efab5" in k}
    assert len(bert) == 3 and all("no one variant won at every shape" in w for w in bert.values())
    assert not got["bert"]["shared_variant"]


def test_a_shape_whose_first_shapes_entry_is_left_out_is_left_out_with_its_why(tmp_path):
    """attorch_lm's linear_forward kernels: one PTX at several shapes where nothing won, so none is said to
    be served by an entry that was never written."""
    got = _db(tmp_path, "attorch_lm")
    linear = {k: w for k, w in got["left_out"].items() if k.startswith("linear_forward_kernel")}
    assert len(linear) == 5 and set(linear.values()) == {"no confirmed winner"}
    assert not any(k.startswith("linear_forward_kernel") for k in got["same_ptx"])
