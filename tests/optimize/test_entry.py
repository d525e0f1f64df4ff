"""`optimize_kernel`, the one optimize entry: a gemm_tile kernel goes through the cycle evaluator, every
other kernel side by side in wall time, each with params.yaml's predict and search settings."""

from __future__ import annotations

import pytest

from chronos.config import Config
from chronos.optimize import optimize_kernel
from chronos.optimize.cycles import optimize
from chronos.optimize.timed import optimize_time
from tests.optimize.test_cycles import _policy_preferring
from tests.rl.standin import StandInBackend, kernels
from tests.search.test_timed import CompareStandIn
from tests.search.test_timed import _kernel as _triton_kernel

CFG = Config()


def _kw():
    return {"max_steps": CFG.predict.max_steps, "min_gain": CFG.search.greedy.min_gain,
            "beam": CFG.predict.beam}


def test_a_gemm_tile_kernel_is_judged_in_cycles():
    (spec, module), = kernels((4, 6, 4)).values()
    policy = _policy_preferring(0)
    got = optimize_kernel(spec, module, StandInBackend(), policy, CFG).to_json()
    assert got == optimize(spec, module, StandInBackend(), policy, **_kw()).to_json()
    assert "optimize" in got and got["verdict"] == "faster"  # vec_ld halves the stand-in's cost
    with pytest.raises(ValueError, match="wall time only"):
        optimize_kernel(spec, module, StandInBackend(), policy, CFG, extra=[("cache_cs",)])


def test_a_triton_kernel_is_judged_side_by_side_in_time_with_its_extra_sets():
    spec, module = _triton_kernel("add_relu_f32_n1000003_nodiv")
    policy = _policy_preferring(3)  # cache_cs: 10% faster in the stand-in comparison
    got = optimize_kernel(spec, module, CompareStandIn(), policy, CFG, extra=[("cache_cg",)]).to_json()
    want = optimize_time(spec, module, CompareStandIn(), policy, timing=CFG.timing, extra=[("cache_cg",)],
                         **_kw()).to_json()
    assert got == want
    assert "cache_cs" in got["returned"].split("+") and [c["actions"] for c in got["fixed"]] == [["cache_cg"]]
