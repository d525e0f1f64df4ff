"""Tuned configs from the committed knob census (#28): each confirmed, bit-exact knob winner becomes the stock
config with that knob moved, keyed by the kernel's source; a kernel without a source hash, with a PTX action
in its winner or without a winner is left out with why."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

from chronos.triton.tuned_configs import config_entries
from chronos.triton.tuned_db import TunedDB
from chronos.tuning.config_db import decision, write_configs
from chronos.tuning.winners import config_change

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "data" / "kernels" / "captured" / "llama"
PARTS = sorted((ROOT / "data" / "knob_census" / "captured" / "llama").glob("*.json"))
INDUCTOR_MAXNREG = "sets maxnreg, which Inductor's autotuner does not pass to Triton"


def assert_maxnreg_deploys_as_ptx(folder: Path, db: Path, rows: list[dict], got: dict) -> int:
    """An Inductor kernel's maxnreg=N winner (Inductor never passes maxnreg to Triton) is the PTX entry of
    stock's PTX with maxnreg_N, then its PTX actions, and that entry remakes the measured PTX; an N that no
    register-budget action sets is left out with why."""
    from chronos.kernels.spec import load_specs, read_ptx
    from chronos.triton.rederive import tuned_ptx
    from chronos.triton.tuned_db import ptx_identity_sha256, show
    from chronos.tuning.config_db import winner_ptx
    from chronos.tuning.winners import split_winner

    specs = {s.kernel: s for s in load_specs(folder / "specs.json")}
    with TunedDB(db, readonly=True) as handle:
        entries = {e.provenance["kernel"]: e for e in handle.entries()}
    deployed = 0
    for r in rows:
        label, ptx_actions = split_winner(r["best"]["actions"])
        budget = f"maxnreg_{label.split('=')[1]}"
        if budget not in ("maxnreg_32", "maxnreg_64", "maxnreg_128", "maxnreg_255"):
            assert INDUCTOR_MAXNREG in got["left_out"][r["kernel"]] and r["kernel"] not in entries
            continue
        e, stock = entries[r["kernel"]], read_ptx(folder / "specs.json", specs[r["kernel"]])
        assert list(e.actions) == [budget, *ptx_actions] and e.verification["measured_as"] == label
        assert e.verification["config"] is None  # its actions go on stock's PTX, on no config's
        shown = [ln for ln in show(db).splitlines() if "+".join(e.actions) in ln]
        assert shown and not any(f"{label} +" in ln for ln in shown)  # `tuned show`: no config before them
        assert e.key.stock_ptx_sha256 == ptx_identity_sha256(stock)
        measured = winner_ptx(folder, specs[r["kernel"]], r["best"]["actions"])[1]
        assert ptx_identity_sha256(tuned_ptx(stock, e)) == ptx_identity_sha256(measured)
        deployed += 1
    assert deployed > 0
    return deployed


def test_labels_become_config_changes_and_ptx_actions_do_not():
    assert config_change("num_warps=8") == {"kwargs": {}, "num_warps": 8}
    assert config_change("XBLOCK=2048,num_warps=8") == {"kwargs": {"XBLOCK": 2048}, "num_warps": 8}
    assert config_change("R0_BLOCK=64") == {"kwargs": {"R0_BLOCK": 64}}
    assert config_change("ld.global.nc") is None and config_change("num_warps=8,cache_cg") is None


def test_the_committed_census_winners_become_entries_once_the_sources_are_known(tmp_path):
    folder = tmp_path / "llama"
    skip = shutil.ignore_patterns("tune-parts", "ttir", "inputs", "blocks*")  # blocks: sources
    shutil.copytree(LLAMA, folder, ignore=skip)
    left = write_configs(folder, list(PARTS), tmp_path / "none.sqlite")
    assert left["entries"] == 0
    assert {v for v in left["left_out"].values() if INDUCTOR_MAXNREG not in v} <= {"no confirmed winner",
                                                                                  "no source hash"}
    identity = json.loads((folder / "triton.json").read_text())
    for name, item in identity.items():  # what a capture since #28 records
        item["source_sha256"] = hashlib.sha256(name.encode()).hexdigest()
    (folder / "triton.json").write_text(json.dumps(identity))
    db = tmp_path / "tuned.sqlite"
    got = write_configs(folder, list(PARTS), db)
    winners = [json.loads(p.read_text()) for p in PARTS]
    won = [r for r in winners if decision(r)[0] is not None and r["kernel"] not in got["same_ptx"]]
    maxnreg = [r for r in won if "maxnreg" in decision(r)[0]]  # Inductor would compile them as stock
    assert_maxnreg_deploys_as_ptx(folder, db, maxnreg, got)
    won = [r for r in won if r not in maxnreg]
    assert got["same_ptx"]  # one PTX at three shapes (llama's rotary kernel), one winner: one entry
    assert got["entries"] == len(won) > 0 and got["kernels"] == len(PARTS)
    with TunedDB(db, readonly=True) as handle:
        entries = {e.provenance["kernel"]: e for e in config_entries(handle)}
    for r in won:
        e = entries[r["kernel"]]
        knob, value = r["best"]["actions"][0].split("=")
        assert getattr(e.tuned, knob) == int(value) and e.stock.kwargs == e.tuned.kwargs
        assert e.ratio == r["best"]["ratio"] and e.key.triton == "3.6.0"
        assert e.key.gpu == r["provenance"]["gpu"]  # the GPU its part was measured on (H200 and H100)
        assert e.key.source_sha256 == identity[r["kernel"]]["source_sha256"]


def test_joint_winners_deploy_as_a_config_and_ptx_actions_keyed_by_the_ptx_that_config_makes(tmp_path):
    """knob_ptx's winners (a knob with a v2 action on top, or v2 actions alone): each becomes its config
    entry and a PTX entry whose key is the knob variant's PTX (stock's where there is no knob), and the
    hook's re-derivation remakes the measured PTX from that root."""
    from chronos.kernels.spec import load_specs
    from chronos.triton.rederive import tuned_ptx
    from chronos.triton.tuned_db import ptx_identity_sha256
    from chronos.tuning.config_db import winner_ptx
    from chronos.tuning.winners import split_winner

    gpt2 = ROOT / "data" / "kernels" / "captured" / "gpt2"
    folder = tmp_path / "gpt2"
    shutil.copytree(gpt2, folder, ignore=shutil.ignore_patterns("tune-parts", "ttir", "inputs"))
    identity = json.loads((folder / "triton.json").read_text())
    for name, item in identity.items():
        item["source_sha256"] = hashlib.sha256(name.encode()).hexdigest()
    (folder / "triton.json").write_text(json.dumps(identity))
    parts = sorted((ROOT / "data" / "knob_ptx" / "captured" / "gpt2").glob("*.json"))
    rows = [json.loads(p.read_text()) for p in parts]
    won = [r for r in rows if r["best"].get("verdict") == "faster"]
    got = write_configs(folder, list(parts), tmp_path / "v3.sqlite")
    served = got["same_ptx"]  # one PTX at two shapes with one winner: one entry serves both
    assert served and all(k not in served for k in served.values())
    won = [r for r in won if r["kernel"] not in served]
    maxnreg = [r for r in won if "maxnreg=" in (split_winner(r["best"]["actions"])[0] or "")]
    as_ptx = assert_maxnreg_deploys_as_ptx(folder, tmp_path / "v3.sqlite", maxnreg, got)
    # one stock PTX at several shapes whose winners differ: one variant for all (test_shapes.py), or none
    differ = {k for k, why in got["left_out"].items() if why.startswith("one stock PTX at")}
    shared = got["shared_variant"]  # its first shape's entries serve the others
    firsts = [split_winner(shared[k]["variant"].split("+")) for k in set(shared) - set(served)]
    won = [r for r in won if r not in maxnreg and r["kernel"] not in differ | set(shared)]
    with_config = [r for r in won if split_winner(r["best"]["actions"])[0] is not None]
    with_ptx = [r for r in won if split_winner(r["best"]["actions"])[1]]
    assert got["entries"] == len(with_config) + sum(c is not None for c, _ in firsts) > 0
    assert got["ptx_entries"] == len(with_ptx) + as_ptx + sum(bool(p) for _, p in firsts)
    assert {v for k, v in got["left_out"].items() if INDUCTOR_MAXNREG not in v and k not in differ} == {
        "no confirmed winner"}
    specs = {s.kernel: s for s in load_specs(folder / "specs.json")}
    with TunedDB(tmp_path / "v3.sqlite", readonly=True) as db:
        entries = [e for e in db.entries()
                   if e.provenance["kernel"] not in {r["kernel"] for r in maxnreg} | set(shared)]
    assert len(entries) == len(with_ptx) > 0
    for e in entries:
        row = next(r for r in won if r["kernel"] == e.provenance["kernel"])
        label, ptx_actions = split_winner(row["best"]["actions"])
        root, tuned = winner_ptx(folder, specs[row["kernel"]], row["best"]["actions"])
        assert list(e.actions) == ptx_actions and e.verification["config"] == label
        assert e.key.stock_ptx_sha256 == ptx_identity_sha256(root)
        assert ptx_identity_sha256(tuned_ptx(root, e)) == ptx_identity_sha256(tuned)
        assert (e.key.triton_hash == identity[row["kernel"]]["hash"]) == (label is None)
    from chronos.triton.tuned_db import show

    shown = show(tmp_path / "v3.sqlite")  # a PTX set on top of a config says so
    assert all(f"{e.verification['config']} + {'+'.join(e.actions)}" in shown
               for e in entries if e.verification["config"])


def test_a_later_stage_s_part_of_a_kernel_supersedes_an_earlier_one_s(tmp_path):
    from chronos.tuning.config_db import latest_parts

    for stage, kernels in (("knob_ptx", ("a", "b")), ("knob_blocks", ("b", "c"))):
        (tmp_path / stage).mkdir()
        for k in kernels:
            (tmp_path / stage / f"{k}.json").write_text("{}")
    got = latest_parts([tmp_path / "knob_ptx", tmp_path / "knob_blocks", tmp_path / "absent"])
    assert [p.relative_to(tmp_path).as_posix() for p in got] == [
        "knob_ptx/a.json", "knob_blocks/b.json", "knob_blocks/c.json"]


def test_a_template_row_block_winner_is_a_config_of_its_row_block_and_its_ptx_actions_on_top():
    row = {"best": {"verdict": "faster", "actions": ["BLOCK_M=64,num_warps=4", "reorder_lf"]},
           "blocks": [{"action": "BLOCK_M=64,num_warps=4", "verdict": "faster", "valid": True}],
           "candidates": [{"action": "BLOCK_M=64,num_warps=4+reorder_lf", "verdict": "faster",
                           "valid": True}]}
    got, why = decision(row)
    assert why == "" and got == {"kwargs": {"BLOCK_M": 64}, "num_warps": 4}
    assert config_change("BLOCK_N1=64")["kwargs"] == {"BLOCK_N1": 64}
    assert config_change("BLOCK_N=64") is None  # an inner block (the reduction's order): never a move


def test_flex_s_row_block_winners_enter_the_db_as_configs_with_their_ptx_on_the_edited_template(tmp_path):
    from chronos.triton.tuned_configs import config_entries
    from chronos.triton.tuned_db import TunedDB
    from chronos.tuning.config_db import latest_parts

    flex = ROOT / "data" / "kernels" / "captured" / "flex"
    stages = [ROOT / "data" / s / "captured" / "flex" for s in ("knob_ptx", "knob_blocks")]
    got = write_configs(flex, latest_parts(stages), tmp_path / "v3.sqlite")
    assert got["left_out"] == {} or all("no confirmed winner" in w for w in got["left_out"].values())
    with TunedDB(tmp_path / "v3.sqlite", readonly=True) as db:
        rows = {e.key.function: e for e in config_entries(db)}
    forward = rows["triton_tem_fused_flex_attention_0"]
    assert forward.stock.kwargs == {} and forward.tuned.kwargs == {"BLOCK_M": 64}
    assert (forward.stock.num_warps, forward.tuned.num_warps) == (8, 4)
    assert forward.verification["bit_exact"] is True
    assert got["ptx_entries"] >= 2  # reorder_lf and st_l1_evict_first on the edited templates' PTX


def test_a_walk_s_end_deploys_as_its_whole_config(tmp_path):
    from chronos.tuning.config_db import latest_parts

    assert config_change("walk:NUM_STAGES=4,XBLOCK=16,num_warps=1,num_stages=1") == {
        "kwargs": {"NUM_STAGES": 4, "XBLOCK": 16}, "num_warps": 1, "num_stages": 1}
    assert config_change("NUM_STAGES=4") is None  # outside a walk's label, only block sizes and knobs
    bert = ROOT / "data" / "kernels" / "captured" / "bert"
    stages = [ROOT / "data" / s / "captured" / "bert" for s in ("knob_ptx", "knob_blocks", "knob_walk")]
    parts = latest_parts(stages)
    firsts = {p: (json.loads(p.read_text())["best"].get("actions") or [""])[0] for p in parts}
    walked = [p for p, first in firsts.items() if first.startswith("walk:")]
    assert len(walked) >= 2 and all(p.parent == stages[-1] for p in walked)
    db = tmp_path / "tuned.sqlite"
    got = write_configs(bert, walked, db)
    # walked again (2026-12-07) under the compile deployment uses: a config with PTX on top enters whole too
    plus_ptx = [p for p in walked if len(json.loads(p.read_text())["best"]["actions"]) > 1]
    assert plus_ptx and got["left_out"] == {}
    assert got["entries"] == len(walked) and got["ptx_entries"] == len(plus_ptx)
    with TunedDB(db) as d:
        entries = {e.provenance["kernel"]: e for e in config_entries(d)}
    for p in walked:
        row = json.loads(p.read_text())
        e, change = entries[row["kernel"]], config_change(row["best"]["actions"][0])
        assert e.tuned.kwargs == change["kwargs"] and e.tuned.kwargs.keys() == e.stock.kwargs.keys()
        assert (e.tuned.num_warps, e.tuned.num_stages) == (change["num_warps"], change["num_stages"])
        assert e.stock != e.tuned and e.verification["bit_exact"] and e.ratio == row["best"]["ratio"]


def test_a_root_compiled_unlike_stock_is_told_by_its_ptx_version_and_module_name():
    """What the walk compiled until 2026-12-06 (Triton's own ptxas: PTX .version 8.7; `.loc` comments naming
    a module file of its own) against the capture's stock PTX: both differences named, none for stock."""
    from chronos.kernels.spec import load_specs, read_ptx
    from chronos.tuning.config_db import unlike

    bert = ROOT / "data" / "kernels" / "captured" / "bert"
    spec = load_specs(bert / "specs.json")[0]
    stock = read_ptx(bert / "specs.json", spec)
    module = re.search(r"//\s*([^\s:/]+\.py):\d", stock).group(1)
    other = re.sub(r"^\.version\s+\S+", ".version 8.7", stock, flags=re.MULTILINE).replace(module, "k.py")
    assert unlike(stock, stock) == ""
    said = unlike(other, stock)
    assert ".version 8.7 where stock has 9.0" in said and "'k.py'" in said and f"'{module}'" in said


def test_a_part_timed_with_another_ptxas_than_the_kernel_deploys_with_is_left_out(tmp_path):
    """A winner is keyed by the ptxas it was timed with; where the capture's Triton assembles the kernel with
    another (attorch_lm's own 12.8, not torch's 13.0), the hook would never find it: left out, saying so."""
    parts = sorted((ROOT / "data" / "knob_ptx" / "captured" / "attorch_lm").glob("*.json"))
    (timed,) = {json.loads(p.read_text())["provenance"]["ptxas"] for p in parts}
    folder = tmp_path / "attorch_lm"
    shutil.copytree(ROOT / "data" / "kernels" / "captured" / "attorch_lm", folder)

    def deployed_with(version: str) -> dict:
        identity = json.loads((folder / "triton.json").read_text())
        for item in identity.values():
            item["ptxas"]["version"] = version
        (folder / "triton.json").write_text(json.dumps(identity))
        return write_configs(folder, parts, tmp_path / f"{version}.sqlite")

    same, other = deployed_with(timed), deployed_with("11.0.1")
    assert same["ptx_entries"] > 0 and not any("ptxas" in why for why in same["left_out"].values())
    assert other["ptx_entries"] == 0 and other["entries"] == 0
    stale = f"measured with ptxas {timed}; its capture's Triton assembles it with 11.0.1"
    assert sum(w.startswith(stale) for w in other["left_out"].values()) == same["ptx_entries"]


def test_leaving_out_actions_drops_every_winner_that_uses_one_and_keeps_the_rest(tmp_path):
    """--leave-out-actions: the DB without the winners that use an action (or a group's member) is the
    full DB less exactly those kernels, each said why; a name that is neither an action nor a group
    raises with the names there are."""
    import pytest

    from chronos.errors import ChronosError
    from chronos.tuning.config_db import latest_parts, leave_out_actions
    from chronos.tuning.winners import confirmed_winner

    bert = ROOT / "data" / "kernels" / "captured" / "bert"
    parts = latest_parts([ROOT / "data" / s / "captured" / "bert" for s in ("knob_ptx", "knob_blocks",
                                                                             "knob_walk")])
    group = leave_out_actions(["l2_policy_streaming"])
    assert "l2_evict_last_streaming" in group and "l2_evict_first_reread" not in group
    full = write_configs(bert, parts, tmp_path / "full.sqlite")
    less = write_configs(bert, parts, tmp_path / "less.sqlite", group)
    users = {json.loads(p.read_text())["kernel"] for p in parts
             if set((confirmed_winner(json.loads(p.read_text()))[0] or (None, []))[1]) & group}
    assert users and set(less["left_out"]) == set(full["left_out"]) | users
    assert all("l2_" in less["left_out"][k] and "--leave-out-actions" in less["left_out"][k] for k in users)
    assert less["entries"] + less["ptx_entries"] < full["entries"] + full["ptx_entries"]
    with pytest.raises(ChronosError, match="neither a v2 action nor a v2 group"):
        leave_out_actions(["l2_evict_lastt_streaming"])


def test_unlike_names_what_the_compile_environment_wrote_differently():
    from chronos.tuning.config_db import unlike

    stock = ".version 9.0\n.target sm_90a\n\t.loc\t1 18 0 // cqw752.py:18:0\n"
    assert unlike(stock.replace("18 0", "19 4"), stock) == ""  # the code may differ, the environment not
    assert unlike(stock.replace("9.0", "8.7"), stock) == ".version 8.7 where stock has 9.0"
    assert unlike(stock.replace("cqw752", "triton_poi_x"), stock) == (
        "source ['triton_poi_x.py'] where stock names ['cqw752.py']")
