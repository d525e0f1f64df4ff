"""Stage `heldout` over recorded census-format parts (the headroom search's step 0 is one): every score is
a recorded outcome, the oracle bounds every method per kernel, the fixed action is chosen without the
held-out family, and the curves cover every fold and epoch."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from chronos.stages import heldout

ROOT = Path(__file__).resolve().parents[2]


def test_leave_one_workload_out_on_recorded_step_0_outcomes(tmp_path):
    params = tmp_path / "params.yaml"
    text = (ROOT / "params.yaml").read_text()
    params.write_text(text.replace("bc_epochs: 200", "bc_epochs: 20").replace("epochs: 1500", "epochs: 15"))
    out, curves = tmp_path / "heldout.json", tmp_path / "curves.csv"
    assert heldout.main(["--params", str(params), "--census", str(ROOT / "data/headroom"), "--out", str(out),
                         "--curves", str(curves)]) == 0
    rep = json.loads(out.read_text())
    rows = rep["kernels"]
    assert len(rows) == rep["total"]["kernels"] == sum(f["kernels"] for f in rep["families"].values()) > 10
    for r in rows:
        part = next((ROOT / "data/headroom").glob(f"**/{r['kernel']}.json"))
        cands = {c["action"]: c for c in json.loads(part.read_text())["trace"][0]["candidates"]}
        for m, g in r["gain"].items():
            assert 0 <= g <= r["gain"]["oracle"] + 1e-12, (r["kernel"], m)
        a = r["actions"]["policy"]
        want = -math.log(cands[a]["ratio"]) if a != "stop" and cands[a].get("verdict") == "faster" else 0.0
        assert r["gain"]["policy"] == want  # the recorded outcome of the chosen action, nothing else
    flex = [r for r in rows if r["family"] == "captured/flex"]
    v2 = heldout.resolve_space("v2")
    others = heldout.load_decisions(ROOT / "data/kernels", ROOT / "data/headroom",
                                    ["captured/llama", "captured/gpt2", "captured/bert", "triton_llm"], v2)
    assert {r["actions"]["fixed"] for r in flex} == {v2.names[heldout.fixed_action(others)]}
    t = rep["total"]
    assert math.isclose(t["policy"]["oracle_share"], t["gain"]["policy"] / t["gain"]["oracle"])
    assert math.isclose(t["time_geomean"]["oracle"], math.exp(t["gain"]["oracle"] / len(rows)))
    lines = list(csv.DictReader(curves.open()))
    assert len(lines) == 15 * len(rep["families"])
    assert {"reward", "kl", "entropy", "heldout_gain", "train_gain"} <= set(lines[0])
    assert set(rep["stability"]) == set(rep["families"])
