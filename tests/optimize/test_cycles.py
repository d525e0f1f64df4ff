"""The optimize path, on a stand-in backend (made-up costs) and on replay misses; its time verdicts."""

import json
from pathlib import Path

import pytest
import torch

from chronos.errors import ChronosError
from chronos.optimize.cycles import clearly_slower_in_time, optimize, summarize, verdict
from chronos.rl.policy import TransformPolicy
from chronos.search.base import Outcome
from tests.rl.standin import StandInBackend, kernels

ROOT = Path(__file__).resolve().parents[2]
MIN_GAIN = 0.005


def _optimize(k, backend, policy, beam=1) -> dict:
    (spec, module), = kernels(k).values()
    return optimize(spec, module, backend, policy, max_steps=6, min_gain=MIN_GAIN, beam=beam).to_json()


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
    row = _optimize((4, 6, 4), StandInBackend(), _policy_preferring(action))
    assert row["verdict"] == verdict and row["optimize"]["returned"] == returned
    assert row["optimize"]["speedup_cycles"] >= 1.0
    summary = summarize([row])
    assert summary["slower_than_baseline"] == 0
    assert summary["wrong_outputs"] == (verdict == "invalid:wrong_output")


class MissingBackend:
    def measure(self, spec, variants, *, baseline_ptx=None):
        raise ChronosError(f"no measurement for {spec.kernel}")


def test_a_replay_miss_is_reported_as_unmeasured():
    row = _optimize((2, 2, 2), MissingBackend(), _policy_preferring(0))
    assert row["verdict"] == "unmeasured" and "no measurement" in row["error"]
    assert row["sequence"] == ["vec_ld"]
    assert summarize([row])["measured"] == 0


def test_committed_triton_results_keep_the_optimize_contract():
    """Per tier: a returned variant is verified and its speedup interval lies above 1 / (1 - min_gain);
    otherwise the baseline comes back at exactly 1.0. Never slower, never wrong."""
    out = json.loads((ROOT / "reports/measure_triton_results.json").read_text())
    assert set(out["tiers"]) == {"triton", "triton_llm"}
    for tier in out["tiers"].values():
        assert len(tier["kernels"]) == 33 and tier["summary"]["slower"] == 0
        for row in tier["kernels"]:
            if row["returned"] == "baseline":
                assert row["speedup_time"] == 1.0
                continue
            chosen = [c for c in [row["greedy"], *row["beam"]] if "+".join(c["actions"]) == row["returned"]]
            assert chosen and all(c["valid"] and c["verdict"] == "faster" for c in chosen)
            assert row["speedup_ci"][0] > 1.0 / (1.0 - MIN_GAIN) and row["speedup_time"] > 1.0


def test_the_cycle_path_refuses_a_multi_thread_kernel():
    from chronos.kernels.spec import load_module, load_specs

    specs = ROOT / "data/kernels/triton/specs.json"
    spec = load_specs(specs)[0]
    with pytest.raises(ChronosError, match="wall time"):
        optimize(spec, load_module(specs, spec), MissingBackend(), _policy_preferring(0), max_steps=6,
                 min_gain=MIN_GAIN)


def test_the_beam_optimize_path_returns_its_fastest_verified_candidate():
    policy = _policy_preferring(3, stop=4.5, second={0: 4.0})  # cache_cs, then stop rather than vec_ld
    row = _optimize((4, 6, 4), StandInBackend(), policy, beam=8)
    assert row["verdict"] == "not_faster"  # greedy: cache_cs alone, 5% slower in the stand-in
    measured = [c for c in row["beam"] if c["verdict"] != "unmeasured"]
    assert len(row["beam"]) == 8 and len(measured) == 8
    faster = [c for c in measured if c["verdict"] == "faster"]
    assert faster, "some of the 8 most probable sets contain vec_ld or vec_st, which the stand-in rewards"
    best = min(faster, key=lambda c: c["cycles"])
    assert row["optimize_beam"]["returned"] == "+".join(best["set"])
    assert row["optimize_beam"]["speedup_cycles"] == pytest.approx(1000.0 / best["cycles"])
    s = summarize([row])["beam"]
    assert s["kernels"] == 1 and s["faster"] == 1 and s["wrong_outputs"] == sum(
        c["verdict"] == "invalid:wrong_output" for c in measured)


def test_a_beam_with_replay_misses_is_incomplete_and_left_out_of_the_geomean():
    row = _optimize((2, 2, 2), MissingBackend(), _policy_preferring(0), beam=4)
    assert row["verdict"] == "unmeasured" and "beam" not in row


def _o(cycles, time_ms, time_iqr=0.0002):
    return Outcome(("vec_ld",), True, cycles=cycles, cycles_iqr=10.0, time_ms=time_ms, time_ms_iqr=time_iqr)


def test_clearly_slower_in_time_needs_the_iqr_bands_apart():
    base = _o(1000.0, 0.0100)
    assert clearly_slower_in_time(_o(800.0, 0.0110), base)
    assert not clearly_slower_in_time(_o(800.0, 0.0101), base)  # above the median, inside the bands
    assert not clearly_slower_in_time(_o(800.0, 0.0090), base)


def test_verdicts():
    base = _o(1000.0, 0.0100)
    assert verdict(("vec_ld",), _o(800.0, 0.0110), base, 0.005) == "slower_in_time"
    assert verdict(("vec_ld",), _o(800.0, 0.0100), base, 0.005) == "faster"
    assert verdict(("vec_ld",), _o(999.0, 0.0090), base, 0.005) == "not_faster"
    assert verdict((), base, base, 0.005) == "stop_first"
