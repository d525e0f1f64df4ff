"""Deploying a template's tuned row blocks (#28): the autotuner Inductor makes for the template becomes the
edited template's (every declaration of the row block set), launched on the grid of the new row blocks,
compiled with the tuned num_warps; anything it cannot deploy stays stock and is counted missed with why."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor.runtime.triton_heuristics")

import triton

from chronos.triton import deploy_configs
from chronos.triton.deploy_configs import source_sha256
from chronos.triton.deploy_rows import row_block_tuner, row_change
from chronos.triton.inductor_source import compile_config, load_tuner
from chronos.triton.tuned_configs import ConfigEntry, ConfigKey, KernelConfig

MODULE = Path(__file__).resolve().parent / "inductor_modules" / "row_template.py"
NAME = "triton_tem_fused_rows_0"
ENV = {"gpu": "NVIDIA H200", "torch": str(torch.__version__), "triton": triton.__version__}
STOCK, TUNED = KernelConfig({}, 8, 3), KernelConfig({"BLOCK_M": 32}, 4, 3)


def _entry(fn) -> ConfigEntry:
    return ConfigEntry(ConfigKey(NAME, source_sha256(fn), **ENV), STOCK, TUNED, 0.93, (0.92, 0.94),
                       {"bit_exact": True})


@pytest.fixture
def deployed():
    yield lambda entries: deploy_configs.enable(entries, lambda: ENV, lambda m: None)
    deploy_configs.disable()


def test_only_a_row_block_the_stock_config_does_not_set_is_a_row_change():
    assert row_change({}, {"BLOCK_M": 64}) == {"BLOCK_M": 64}
    assert row_change({"XBLOCK": 64}, {"XBLOCK": 128}) == {}


def test_the_row_block_tuner_compiles_the_edited_template_on_its_own_grid():
    stock = load_tuner(MODULE, NAME)
    cfg = stock.configs[0]
    tuned_cfg = type(cfg)({"BLOCK_M": 32}, num_warps=4, num_stages=cfg.num_stages)
    new = row_block_tuner(stock, {"BLOCK_M": 32}, tuned_cfg)
    assert "BLOCK_M : tl.constexpr = 32" in new.fn.src and "= 128" not in new.fn.src
    assert new.inductor_meta["fixed_grid"] == ["-((ks0) // -32)", "_grid_1", "_grid_2"]
    assert stock.inductor_meta["fixed_grid"][0] == "_grid_0"  # the stock autotuner is left as it was
    assert (new.configs[0].kwargs, new.configs[0].num_warps) == ({}, 4)
    ptx = compile_config(new, new.configs[0])[0]
    assert ".reqntid 128" in ptx and ptx != compile_config(stock, cfg)[0]


def test_inductor_s_autotuner_of_the_template_becomes_the_edited_one_under_deployment(deployed):
    plain = load_tuner(MODULE, NAME)
    session = deployed([_entry(plain.fn)])
    tuner = load_tuner(MODULE, NAME)  # made under the deployment
    assert "BLOCK_M : tl.constexpr = 32" in tuner.fn.src
    assert tuner.inductor_meta["fixed_grid"][0] == "-((ks0) // -32)"
    assert [c.num_warps for c in tuner.configs] == [4]
    assert session.stats()["applied_names"] == [NAME]


def test_a_template_launched_on_another_grid_stays_stock_and_is_missed_with_why(deployed):
    plain = load_tuner(MODULE, NAME)  # made before the deployment: the stock template
    session = deployed([_entry(plain.fn)])
    plain.inductor_meta = {**plain.inductor_meta, "grid_type": "Grid1D"}
    compiler, cfg = session.compile_plan(plain, plain.configs[0])
    assert compiler is plain and cfg is plain.configs[0]
    s = session.stats()
    assert NAME in s["missed_names"] and "not a FixedGrid template launch" in s["reasons"][NAME]


@pytest.mark.gpu
def test_on_a_gpu_the_deployed_row_block_launches_on_its_own_grid_and_gives_stock_s_output(deployed):
    """The caller passes stock's grid (cdiv(n, 128)); the edited template (32 rows a program) covers all n
    rows only if its launcher computes its own first axis. Both write 2 * q, bit for bit."""
    n = 1000  # not a multiple of either row block: the grid rule and the masks both count
    q = torch.randn(n, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    outs = {}
    for name in ("stock", "deployed"):
        if name == "deployed":
            deployed([_entry(load_tuner(MODULE, NAME).fn)])
        tuner = load_tuner(MODULE, NAME)
        tuner.precompile()
        out = torch.full((n,), float("nan"), device="cuda")
        tuner.run(q, out, n, -(-n // 128), 1, 1, stream=stream)
        torch.cuda.synchronize()
        outs[name] = out
    assert deploy_configs.stats()["applied_names"] == [NAME]
    assert torch.equal(outs["stock"], 2.0 * q) and torch.equal(outs["deployed"], outs["stock"])
