"""The joint step (#28): v2 PTX actions on top of each kernel's knob winner replay as recorded from the store,
keep the winner's launch geometry, and every speedup is a confirmed, bit-exact one against stock."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.kernels.spec import load_specs
from chronos.search.knob_ptx import contenders, knob_winner
from chronos.stages import knob_ptx

ROOT = Path(__file__).resolve().parents[2]
CAPTURED = ROOT / "data" / "kernels" / "captured"


def test_the_committed_joint_step_replays_as_recorded(tmp_path):
    out = tmp_path / "knob_ptx.json"
    rc = knob_ptx.main(["--params", str(ROOT / "params.yaml"),
                           "--kernels", str(ROOT / "data/kernels"),
                           "--knob-parts", str(ROOT / "data/knob_census"),
                           "--parts", str(ROOT / "data/knob_ptx"), "--backend", "replay",
                           "--store", str(ROOT / "data/store/measurements.sqlite"), "--out", str(out)])
    got, committed = json.loads(out.read_text()), json.loads((ROOT / "reports/knob_ptx.json").read_text())
    assert rc == 0 and got["disagreements"] == [] and got["summary"] == committed["summary"]
    for r in (r for r in got["kernels"] if "best" in r):
        assert r["as_recorded"]
        if r["speedup"] > 1:
            assert r["best"]["verdict"] == "faster" and r["best"]["ratio"] < 1
            if r["root"]:  # the joint winner starts from the knob the census confirmed
                assert r["best"]["actions"][0] == r["root"]


def test_ptx_actions_on_a_knob_winner_keep_its_launch():
    family = "captured/gpt2"
    for spec in load_specs(CAPTURED / "gpt2" / "specs.json"):
        knob = knob_winner(ROOT / "data/knob_census", family, spec.kernel)
        if knob and knob.startswith("num_warps"):
            break
    else:
        raise AssertionError("no num_warps winner in gpt2's committed census")
    vs = contenders(spec, CAPTURED / "gpt2", knob)
    assert vs[0].actions == () and vs[1].actions == (knob,) and len(vs) > 2
    assert all(v.actions[0] == knob and v.launch == vs[1].launch for v in vs[1:])
    assert vs[1].launch.block[0] == 32 * int(knob.split("=")[1])
    assert len({v.key for v in vs}) == len(vs)
