"""Deploying a tuned config (#28): Inductor's autotuner and a plain JIT launch compile the kernel with the
tuned config only where they would have used exactly the entry's stock one, in the environment it was
measured in; the hook's enable() deploys the DB's configs beside its PTX and stats() says what happened."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor.runtime.triton_heuristics")

import triton

from chronos.triton import deploy_configs, hook
from chronos.triton.deploy_configs import ConfigSession, source_sha256
from chronos.triton.inductor_source import compile_config, load_tuner
from chronos.triton.tuned_configs import ConfigEntry, ConfigKey, KernelConfig, put_config
from chronos.triton.tuned_db import TunedDB

MODULE = Path(__file__).resolve().parent / "inductor_modules" / "pointwise_mul.py"
NAME = "triton_poi_fused_mul_0"
GPU = "NVIDIA H200"
ENV = {"gpu": GPU, "torch": str(torch.__version__), "triton": triton.__version__}


def _entry(fn, stock: KernelConfig, tuned: KernelConfig, **over) -> ConfigEntry:
    key = ConfigKey(NAME, source_sha256(fn), **{**ENV, **over})
    return ConfigEntry(key, stock, tuned, 0.9, (0.88, 0.92), {"bit_exact": True})


def _stock_of(tuner) -> KernelConfig:
    c = tuner.configs[0]
    return KernelConfig(dict(c.kwargs), c.num_warps, c.num_stages)


@pytest.fixture
def deployed():
    def start(entries):
        return deploy_configs.enable(entries, lambda: ENV, lambda m: None)

    yield start
    deploy_configs.disable()


def test_inductor_compiles_the_tuned_config_where_its_configs_hold_the_stock_one(deployed):
    plain = load_tuner(MODULE, NAME)
    stock = _stock_of(plain)
    tuned = KernelConfig({"XBLOCK": 2 * stock.kwargs["XBLOCK"]}, 2 * stock.num_warps, stock.num_stages)
    session = deployed([_entry(plain.fn, stock, tuned)])
    tuner = load_tuner(MODULE, NAME)  # a fresh module: its autotuner is made under the deployment
    assert [(c.kwargs, c.num_warps) for c in tuner.configs] == [(tuned.kwargs, tuned.num_warps)]
    assert f".reqntid {32 * tuned.num_warps}" in compile_config(tuner, tuner.configs[0])[0]
    assert session.stats()["applied_names"] == [NAME]


def test_an_entry_for_another_stock_config_or_environment_leaves_inductor_as_it_was(deployed):
    plain = load_tuner(MODULE, NAME)
    other = KernelConfig({"XBLOCK": 64}, 1, 1)
    deployed([_entry(plain.fn, other, KernelConfig({"XBLOCK": 128}, 1, 1))])
    assert [c.kwargs for c in load_tuner(MODULE, NAME).configs] == [c.kwargs for c in plain.configs]
    s = deploy_configs.stats()
    assert s["missed_names"] == [NAME] and "not among Inductor's configs" in s["reasons"][NAME]
    deployed([_entry(plain.fn, _stock_of(plain), other, triton="0.0.0")])
    assert [c.kwargs for c in load_tuner(MODULE, NAME).configs] == [c.kwargs for c in plain.configs]
    assert "tuned for triton 0.0.0" in deploy_configs.stats()["reasons"][NAME]


def test_a_jit_launch_takes_the_tuned_config_only_for_exactly_the_stock_one():
    fn = SimpleNamespace(__name__=NAME, src="def k(x, BLOCK: tl.constexpr): ...")
    stock, tuned = KernelConfig({"BLOCK": 128}, 4, 3), KernelConfig({"BLOCK": 256}, 8, 2, maxnreg=128)
    s = ConfigSession([_entry(fn, stock, tuned)], lambda: ENV)
    assert s.jit_kwargs(fn, {"BLOCK": 128}) == {"BLOCK": 256, "num_warps": 8, "num_stages": 2, "maxnreg": 128}
    assert s.jit_kwargs(fn, {"BLOCK": 128, "num_warps": 8}) == {"BLOCK": 128, "num_warps": 8}  # not stock
    assert s.jit_kwargs(fn, {"BLOCK": 64}) == {"BLOCK": 64}
    other = SimpleNamespace(__name__=NAME, src="def k(x, BLOCK: tl.constexpr): return")
    assert s.jit_kwargs(other, {"BLOCK": 128}) == {"BLOCK": 128}  # another source: no entry
    assert s.stats()["applied"] == 1 and s.stats()["missed"] == 1


def test_the_jit_wrapper_hands_the_launch_the_tuned_kwargs(deployed):
    class JITFunction:
        def run(self, *args, grid, warmup, **kwargs):
            return kwargs

    fn = JITFunction()
    fn.__name__, fn.src = NAME, "def k(x, BLOCK: tl.constexpr): ..."
    deployed([_entry(fn, KernelConfig({"BLOCK": 128}, 4, 3), KernelConfig({"BLOCK": 64}, 2, 3))])
    deploy_configs._wrap_jit(SimpleNamespace(JITFunction=JITFunction))
    assert fn.run(1, grid=(1,), warmup=False, BLOCK=128) == {"BLOCK": 64, "num_warps": 2, "num_stages": 3}
    deploy_configs.disable()
    assert fn.run(1, grid=(1,), warmup=False, BLOCK=128) == {"BLOCK": 128}  # after disable: as launched


def test_a_config_that_is_not_bit_exact_deploys_only_with_the_tolerance_it_was_tuned_under():
    fn = SimpleNamespace(__name__=NAME, src="def k(): ...")
    e = _entry(fn, KernelConfig({"BLOCK": 128}, 4, 3), KernelConfig({"BLOCK": 64}, 4, 3))
    unsaid = ConfigEntry(e.key, e.stock, e.tuned, e.ratio, e.ci, {"bit_exact": False})
    s = ConfigSession([unsaid], lambda: ENV)
    assert s.jit_kwargs(fn, {"BLOCK": 128}) == {"BLOCK": 128}
    assert "not bit-exact and tuned with no tolerance" in s.stats()["reasons"][NAME]
    chosen = ConfigEntry(e.key, e.stock, e.tuned, e.ratio, e.ci,
                         {"bit_exact": False, "tolerance": "rtol=1e-05"})
    assert ConfigSession([chosen], lambda: ENV).jit_kwargs(fn, {"BLOCK": 128})["BLOCK"] == 64


def test_the_hook_deploys_the_db_s_configs_and_reports_them(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    plain = load_tuner(MODULE, NAME)
    stock = _stock_of(plain)
    db = tmp_path / "tuned.sqlite"
    with TunedDB(db) as handle:
        put_config(handle, ConfigKey(NAME, source_sha256(plain.fn), **ENV), stock,
                   KernelConfig(stock.kwargs, 2 * stock.num_warps, stock.num_stages), 0.9, (0.88, 0.92),
                   {"bit_exact": True})
    with triton.knobs.cache.scope(), triton.knobs.runtime.scope():
        try:
            hook.enable(db, gpu=GPU, driver="580.95.05 (CUDA 13.0)", ptxas="13.0")
            assert load_tuner(MODULE, NAME).configs[0].num_warps == 2 * stock.num_warps
            assert hook.stats()["configs"]["applied_names"] == [NAME]
        finally:
            hook.disable()
    assert load_tuner(MODULE, NAME).configs[0].num_warps == stock.num_warps  # disabled: stock again
