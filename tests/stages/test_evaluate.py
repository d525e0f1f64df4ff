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


def _policy_preferring(action_index: int, stop: float = 1.0, second: dict | None = None) -> TransformPolicy:
    """A policy whose logits favour one action everywhere (then stop, once it is masked out)."""
    torch.manual_seed(0)
    p = TransformPolicy()
    with torch.no_grad():
        for prm in p.parameters():
            prm.zero_()
        last = [m for m in p.modules() if isinstance(m, torch.nn.Linear)][-1]
        last.bias[action_index] = 5.0
        last.bias[20] = stop  # stop next
        for a, b in (second or {}).items():
            last.bias[a] = b
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


def test_the_beam_optimize_path_returns_its_fastest_verified_candidate():
    env = TransformEnv(kernels((4, 6, 4)), StandInBackend(), EnvConfig())
    policy = _policy_preferring(3, stop=4.5, second={0: 4.0})  # cache_cs, then stop rather than vec_ld
    row = evaluate.evaluate_kernel(env, policy, "gemm_tile(4,6,4)", 6, 0.005, beam=8)
    assert row["verdict"] == "not_faster"  # greedy: cache_cs alone, 5% slower in the stand-in
    measured = [c for c in row["beam"] if c["verdict"] != "unmeasured"]
    assert len(row["beam"]) == 8 and len(measured) == 8
    faster = [c for c in measured if c["verdict"] == "faster"]
    assert faster, "some of the 8 most probable sets contain vec_ld or vec_st, which the stand-in rewards"
    best = min(faster, key=lambda c: c["cycles"])
    assert row["optimize_beam"]["returned"] == "+".join(best["set"])
    assert row["optimize_beam"]["speedup_cycles"] == pytest.approx(1000.0 / best["cycles"])
    s = evaluate.summarize([row])["beam"]
    assert s["kernels"] == 1 and s["faster"] == 1 and s["wrong_outputs"] == sum(
        c["verdict"] == "invalid:wrong_output" for c in measured)


def test_a_beam_with_replay_misses_is_incomplete_and_left_out_of_the_geomean():
    env = TransformEnv(kernels((2, 2, 2)), MissingBackend(), EnvConfig())
    row = evaluate.evaluate_kernel(env, _policy_preferring(0), "gemm_tile(2,2,2)", 6, 0.005, beam=4)
    assert row["verdict"] == "unmeasured" and "beam" not in row
