"""scripts/e2e.py on a CPU: four workers (stock twice, hooked on an empty DB, tuned) built from a toy
workloads module; the bitwise comparison tells a deterministic phase from one that differs between
processes, and the timing rounds come back paired, one per worker per round."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TOY = '''
import os
import torch
torch.cuda.synchronize = lambda: None  # a CPU stand-in for the GPU's synchronisation

def toy():
    w = torch.randn(64, 64, requires_grad=True)
    x = torch.randn(32, 64)

    def train():
        w.grad = None
        loss = (x @ w).square().sum()
        loss.backward()
        return [loss.detach(), w.grad]

    def per_process():
        return [torch.tensor(os.getpid())]

    return {"train": train, "per_process": per_process}

WORKLOADS = {"toy": toy}
'''


@pytest.mark.slow
def test_e2e_compares_outputs_bitwise_and_pairs_rounds(tmp_path):
    pytest.importorskip("triton")
    from chronos.triton import TunedDB

    (tmp_path / "toy.py").write_text(TOY)
    with TunedDB(tmp_path / "t.sqlite"):
        pass
    out = tmp_path / "e2e.json"
    cmd = [sys.executable, str(ROOT / "scripts/e2e.py"), "toy", "--db", str(tmp_path / "t.sqlite"),
           "--workloads", str(tmp_path / "toy.py"), "--out", str(out), "--rounds", "4", "--steps", "1",
           "--warmup", "1", "--round-seconds", "0", "--stock-runs", "3"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    r = json.loads(out.read_text())
    assert r["phases_equal"] == {"train": True, "per_process": False}
    assert r["stock_self_equal"] == {"train": True, "per_process": False}
    assert not r["outputs_equal"] and not r["stock_deterministic"]
    assert list(r["within_stock_spread"]) == ["per_process"]  # judged against stock's own spread
    assert r["within_stock_spread"]["per_process"]["max_abs_stock"] > 0
    assert r["hook"]["enabled"] and r["hook"]["swapped"] == 0
    assert r["speedup"]["rounds"] == 4
    assert all(len(r["times"][w]) == 4 for w in ("stock_a", "stock_b", "stock_c", "hooked", "tuned"))
    assert r["stock_runs"] == 3 and list(r["aa_extra"]) == ["stock_c"]
    assert r["hooked_outputs_equal"] is False  # per_process differs, train does not
    assert r["hook_cost"]["rounds"] == r["swap_effect"]["rounds"] == 4
    lo, hi = r["speedup"]["ci95"]
    assert lo <= r["speedup"]["median"] <= hi


def test_short_phases_get_more_steps_per_round():
    import importlib.util

    spec = importlib.util.spec_from_file_location("e2e", ROOT / "scripts/e2e.py")
    e2e = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(e2e)
    assert e2e.steps_per_phase({"train": 0.003, "decode": 0.5}, 3, 0.25) == {"train": 84, "decode": 3}


def _e2e_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("e2e", ROOT / "scripts/e2e.py")
    e2e = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(e2e)
    return e2e


def test_spread_demands_bitwise_where_stock_repeats_itself_and_the_envelope_elsewhere(tmp_path):
    torch = pytest.importorskip("torch")
    e2e = _e2e_module()
    det, racy = torch.arange(6.0), torch.tensor([1.0, 2.0])
    runs = {"stock_a": [det, racy], "stock_b": [det, racy + 2.0 ** -10], "hooked": [det, racy - 2.0 ** -9],
            "tuned": [det, racy + 2.0 ** -9]}

    def judged(tuned):
        for role, ts in {**runs, "tuned": tuned}.items():
            torch.save(ts, tmp_path / f"{role}_train.pt")
        return e2e.spread(tmp_path, "train")

    ok = judged(runs["tuned"])
    assert ok["within"] and ok["deterministic"] == 1 and ok["tensors"] == 2
    moved = judged([det + torch.tensor([0, 0, 0, 0, 0, 2.0 ** -20]), racy])  # one ulp-ish in a stable tensor
    assert not moved["within"] and moved["offenders"][0]["kind"] == "deterministic"
    wide = judged([det, racy + 2.0 ** -6])  # beyond what the stock runs differ by
    assert [o["kind"] for o in wide["offenders"]] == ["racy"]
    torch.save([det, racy - 2.0 ** -6], tmp_path / "stock_c_train.pt")  # a third stock run differs as much
    assert e2e.spread(tmp_path, "train", ("stock_a", "stock_b", "stock_c"))["within"]
