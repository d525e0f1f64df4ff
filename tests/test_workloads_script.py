"""scripts/workloads.py's pending workloads (#28 item 7): defined beside the registry's, never in it, and
the hand-written-Triton model trains through Triton's interpreter on a CPU at toy sizes (its GPU run is a
capture on the device: scripts/device.sh pending)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from chronos.config.workloads import NAMES, workload
from tests.benchmark_module import load_script

ROOT = Path(__file__).resolve().parents[1]

# experiments/attorch/cpu_interpret.py's mode: every device="cuda" sent to the CPU, attorch's capability
# query and the autotuner's timing stubbed; the kernels run in Triton's interpreter, the model as built.
ON_A_CPU = """
import importlib.util, json, sys, torch
sys.path.insert(0, "experiments/attorch")
from cpu_interpret import on_cpu

spec = importlib.util.spec_from_file_location("workloads", "scripts/workloads.py")
w = importlib.util.module_from_spec(spec)
spec.loader.exec_module(w)
torch.manual_seed(0)
with on_cpu():
    phases = w.attorch_lm(hidden=64, heads=4, ffn=96, layers=1, vocab=100, batch=1, seq=16)
    train = phases["train"]()
    logits = phases["inference"]()[0]
print(json.dumps({"phases": list(phases), "loss": float(train[0]), "grads": len(train) - 1,
                  "finite": all(bool(torch.isfinite(g).all()) for g in train), "logits": list(logits.shape)}))
"""


def test_pending_workloads_are_defined_beside_the_registry_not_in_it():
    module = load_script("scripts/workloads.py")
    assert set(module.PENDING) == {"flex_decode_long", "attorch_lm"}
    assert not set(module.PENDING) & set(NAMES)


def test_the_script_offers_the_pending_workloads_on_its_command_line():
    out = subprocess.run([sys.executable, "scripts/workloads.py", "--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert "attorch_lm" in out and "flex_decode_long" in out


def test_the_attorch_model_trains_in_tritons_interpreter():
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, "-c", ON_A_CPU], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert tuple(got["phases"]) == workload("attorch_lm").phases == ("train", "inference")
    # embedding, 2 norms + 4 projections per block, the final norm and the head: every parameter has a grad
    assert got["grads"] == 9 and got["finite"]
    assert 4.0 < got["loss"] < 5.3  # cross entropy of near-uniform logits over 100 classes: ~ln(100) = 4.6
    assert got["logits"] == [1, 16, 100]


def test_hand_written_kernels_count_as_triton_by_their_names():
    triton = pytest.importorskip("triton")

    @triton.jit
    def a_hand_written_kernel(x_ptr):
        pass

    class Gone:
        pass

    obj = Gone()
    dead = weakref.proxy(obj)  # a dead weak proxy among the process's objects: isinstance raises through it
    del obj
    assert "a_hand_written_kernel" in load_script("scripts/workloads.py").jit_names() and dead is not None
