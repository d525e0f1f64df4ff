"""Search strategies over a deterministic stand-in backend (no GPU): the logic, not the numbers.

The stand-in scores a variant by a made-up cost of its PTX (memory instructions are expensive, vectors
cheaper); these numbers only exercise the strategies and are never reported anywhere.
"""

import hashlib

from chronos.config import GreedySearchConfig, RandomSearchConfig
from chronos.kernels.gemm_tile import gemm_tile_ptx, gemm_tile_spec
from chronos.measure.store import Record
from chronos.ptx import parse
from chronos.search import CANONICAL_ORDER, canonical, enumerate_sets, realize, run
from chronos.search.strategies import ExhaustiveConfig


class StandInBackend:
    """Cost = 10 per memory instruction + 1 per other instruction; a 'wrong_output' for one action set."""

    def __init__(self, poisoned=("reorder_sl",)):
        self.calls = 0
        self.measured = set()
        self.poisoned = set(poisoned)

    def measure(self, spec, variants, *, baseline_ptx=None):
        self.calls += 1
        out = []
        for v in variants:
            assert v.ptx_sha256 not in self.measured, "the same PTX was measured twice"
            self.measured.add(v.ptx_sha256)
            lines = [ln.strip() for ln in v.ptx.splitlines() if ln.strip().endswith(";")]
            cost = sum(10 if (" ld." in f" {ln}" or " st." in f" {ln}") else 1 for ln in lines)
            bad = bool(self.poisoned & set(v.actions))
            out.append(Record(kernel=spec.kernel, ptx_sha256=v.ptx_sha256,
                              cubin_sha256=hashlib.sha256(str(cost).encode()).hexdigest(), gpu="stand-in",
                              driver="-", ptxas="-", config_hash="-", actions=tuple(v.actions), valid=not bad,
                              reason="wrong_output" if bad else "", cycles_median=float(cost),
                              cycles_iqr=0.0))
        return out


def _kernel(m=4, n=6, k=4):
    return gemm_tile_spec(m, n, k), parse(gemm_tile_ptx(m, n, k))


def test_canonical_order_makes_variants_functions_of_sets():
    _, root = _kernel()
    a = realize(root, ["maxnreg_128", "vec_st", "cache_cs", "vec_ld"])
    b = realize(root, ["vec_ld", "cache_cs", "vec_st", "maxnreg_128"])
    assert a is not None
    assert a.applied == b.applied == canonical(["vec_ld", "vec_st", "cache_cs", "maxnreg_128"])
    assert CANONICAL_ORDER.index("prefetch_L2") < CANONICAL_ORDER.index("reorder_cp")


def test_greedy_records_demonstrations_and_stops():
    spec, root = _kernel()
    backend = StandInBackend()
    res = run("greedy", spec, root, backend, GreedySearchConfig(max_steps=6, min_gain=0.001))
    assert res.best.cycles < res.baseline.cycles
    assert {"vec_ld", "vec_st"} <= set(res.best.actions)
    assert all(d["action"] != "reorder_sl" for d in res.demos)  # a wrong_output variant never wins
    assert len(res.demos[0]["features"]) == 25 and len(res.demos[0]["mask"]) == 21
    chosen = [d["action"] for d in res.demos]
    assert chosen[-1] == "stop" or len(chosen) == 6
    assert res.invalid.get("wrong_output", 0) >= 1


def test_random_respects_budget_and_seed():
    spec, root = _kernel()
    r1 = run("random", spec, root, StandInBackend(), RandomSearchConfig(budget=20, seed=3))
    r2 = run("random", spec, root, StandInBackend(), RandomSearchConfig(budget=20, seed=3))
    assert r1.evaluated <= 21 and r1.best.actions == r2.best.actions


def test_exhaustive_is_the_oracle():
    spec, root = _kernel(2, 2, 2)
    ex = run("exhaustive", spec, root, StandInBackend(), ExhaustiveConfig(batch=500))
    gr = run("greedy", spec, root, StandInBackend(), GreedySearchConfig(min_gain=0.0))
    assert ex.evaluated == sum(1 for _ in enumerate_sets(root))
    assert ex.best.cycles <= gr.best.cycles
    assert ex.unique_cubins < ex.evaluated  # identical costs stand in for identical SASS
