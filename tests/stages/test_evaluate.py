"""The evaluate stage's optimize path, on a stand-in backend (made-up costs) and on replay misses."""

import json
from pathlib import Path

import pytest
import torch

from chronos.errors import ChronosError
from chronos.rl.env import EnvConfig, TransformEnv
from chronos.rl.policy import TransformPolicy
from chronos.stages import evaluate

from ..rl.standin import StandInBackend, kernels

ROOT = Path(__file__).resolve().parents[2]


def _policy_preferring(action_index: int) -> TransformPolicy:
    """A policy whose logits favour one action everywhere (then stop, once it is masked out)."""
    torch.manual_seed(0)
    p = TransformPolicy()
    with torch.no_grad():
        for prm in p.parameters():
            prm.zero_()
        last = [m for m in p.modules() if isinstance(m, torch.nn.Linear)][-1]
        last.bias[action_index] = 5.0
        last.bias[20] = 1.0  # stop next
    return p.eval()


@pytest.mark.parametrize(("action", "verdict", "returned"), [
    (0, "faster", "variant"),                        # vec_ld halves the made-up cost
    (3, "not_faster", "baseline"),                   # cache_cs makes it 5% slower: the baseline comes back
    (17, "invalid:wrong_output", "baseline"),        # reorder_sl is poisoned in the stand-in
])
def test_optimize_path_never_returns_a_slower_or_unverified_kernel(action, verdict, returned):
    env = TransformEnv(kernels((4, 6, 4)), StandInBackend(), EnvConfig())
    row = evaluate.evaluate_kernel(env, _policy_preferring(action), "gemm_tile(4,6,4)", 6, 0.005)
    assert row["verdict"] == verdict and row["optimize"]["returned"] == returned
    assert row["optimize"]["speedup_cycles"] >= 1.0
    summary = evaluate.summarize([row])
    assert summary["slower_than_baseline"] == 0 and summary["wrong_outputs"] == (verdict == "invalid:wrong_output")


class MissingBackend:
    def measure(self, spec, variants, *, baseline_ptx=None):
        raise ChronosError(f"no measurement for {spec.kernel}")


def test_a_replay_miss_is_reported_as_unmeasured():
    env = TransformEnv(kernels((2, 2, 2)), MissingBackend(), EnvConfig())
    row = evaluate.evaluate_kernel(env, _policy_preferring(0), "gemm_tile(2,2,2)", 6, 0.005)
    assert row["verdict"] == "unmeasured" and "no measurement" in row["error"] and row["sequence"] == ["vec_ld"]
    assert evaluate.summarize([row])["measured"] == 0


def test_committed_triton_results_keep_the_optimize_contract():
    out = json.loads((ROOT / "reports/measure_triton_results.json").read_text())
    assert len(out["kernels"]) == 33 and out["summary"]["slower_than_baseline"] == 0
    for row in out["kernels"]:
        if "optimize" in row:
            assert row["optimize"]["speedup_cycles"] >= 1.0
            assert (row["optimize"]["returned"] == "variant") == (row["verdict"] == "faster")
