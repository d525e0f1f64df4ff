"""Two kernel sets in one process (#28 item 6): every tracked autotuner's running config compiled again into
a set of its own (the tuned config where a deployed entry holds one), the autotuners left on stock, and a
switch that points each at one set's launchers."""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

from chronos.triton import deploy_configs, kernel_sets
from chronos.triton.tuned_configs import ConfigEntry, ConfigKey, KernelConfig


class _Launcher:
    def __init__(self, config, tag):
        self.config, self.tag = config, tag


class _Result:
    def __init__(self, config):
        self.config = config

    def make_launcher(self):
        return _Launcher(self.config, "built")


def _autotuner_class():
    class CachingAutotuner:  # what kernel_sets needs of Inductor's
        def __init__(self, name, cfg):
            self.fn = SimpleNamespace(__name__=name, src=f"def {name}(): ...")
            self.configs = [cfg]
            self.launchers = [_Launcher(cfg, "warm-up")]
            self.compiled = []

        def _precompile_config(self, cfg):
            self.compiled.append(cfg)
            return _Result(cfg)

    return CachingAutotuner


def _cfg(xblock, warps):
    return SimpleNamespace(kwargs={"XBLOCK": xblock}, num_warps=warps, num_stages=1)


def test_a_copy_of_stock_and_a_tuned_set_and_the_switch_between_them():
    cls = _autotuner_class()
    kernel_sets.track()
    kernel_sets._wrap(SimpleNamespace(CachingAutotuner=cls))
    a, b = cls("k_a", _cfg(512, 4)), cls("k_b", _cfg(1024, 4))
    stock = kernel_sets.capture_stock()
    assert {id(t) for t in stock.tuners} >= {id(a), id(b)}
    copy = kernel_sets.build("copy", stock)
    assert copy.launchers[id(a)][0].tag == "built" and a.launchers[0].tag == "warm-up"  # left on stock
    entry = ConfigEntry(ConfigKey("k_a", deploy_configs.source_sha256(a.fn), "G", "", ""),
                        KernelConfig({"XBLOCK": 512}, 4, 1), KernelConfig({"XBLOCK": 1024}, 8, 1), 0.9,
                        (0.88, 0.92), {"bit_exact": True})
    env = {"gpu": "G", "torch": "", "triton": ""}
    tuned = kernel_sets.build("tuned", stock, db="db",
                              enable=lambda db: deploy_configs.enable([entry], lambda: env, lambda m: None),
                              disable=deploy_configs.disable)
    got = tuned.launchers[id(a)][0].config
    assert (got.kwargs, got.num_warps) == ({"XBLOCK": 1024}, 8) and "k_a" in tuned.configs
    assert tuned.launchers[id(b)][0].config.kwargs == {"XBLOCK": 1024} and "k_b" not in tuned.configs
    kernel_sets.use(tuned)
    assert a.launchers[0] is tuned.launchers[id(a)][0]
    kernel_sets.use(stock)
    assert a.launchers[0].tag == "warm-up"


class _JITFunction:  # what kernel_sets needs of Triton's: per device (kernel cache, ...) keyed by the options
    def __init__(self, name):
        self.__name__, self.src = name, f"def {name}(): ..."
        self.device_caches = defaultdict(self.create_binder)
        self.compiled = []

    def create_binder(self):
        return {}, {}, "target", "backend", "binder"

    def run(self, *args, grid, warmup, **kwargs):
        kernels = self.device_caches[0][0]
        key = (kwargs.get("num_warps", 4), kwargs.get("BLOCK"))
        if key not in kernels:
            self.compiled.append(key)
            kernels[key] = f"kernel{key}"
        return kernels[key]


def test_a_jit_function_gets_a_cache_per_set_and_its_tuned_options_where_the_set_is_used():
    kernel_sets.track()
    kernel_sets._wrap_jit(SimpleNamespace(JITFunction=_JITFunction))
    deploy_configs._wrap_jit(SimpleNamespace(JITFunction=_JITFunction))
    fn = _JITFunction("norm")
    launch = lambda: fn.run(grid=(1,), warmup=False, BLOCK=64, num_warps=4, num_stages=3)
    assert launch() == "kernel(4, 64)"
    stock = kernel_sets.capture_stock()
    assert stock.jit[id(fn)] is fn.device_caches
    copy = kernel_sets.build("copy", stock, warm=launch)
    assert copy.jit[id(fn)] is not stock.jit[id(fn)] and fn.compiled == [(4, 64), (4, 64)]
    entry = ConfigEntry(ConfigKey("norm", deploy_configs.source_sha256(fn), "G", "", ""),
                        KernelConfig({"BLOCK": 64}, 4, 3), KernelConfig({"BLOCK": 64}, 8, 3), 0.9,
                        (0.88, 0.92), {"bit_exact": True})
    env = {"gpu": "G", "torch": "", "triton": ""}
    tuned = kernel_sets.build("tuned", stock, db="db",
                              enable=lambda db: deploy_configs.enable([entry], lambda: env, lambda m: None),
                              disable=deploy_configs.disable, warm=launch)
    assert fn.device_caches is stock.jit[id(fn)] and launch() == "kernel(4, 64)"  # left on stock
    kernel_sets.use(tuned)
    assert launch() == "kernel(8, 64)" and fn.compiled[-1] == (8, 64)  # compiled once, by the warm-up
    assert kernel_sets.jit_compiled(tuned) == 1
    fn.run(grid=(1,), warmup=False, BLOCK=128, num_warps=4, num_stages=3)  # a shape the warm pass never ran
    assert kernel_sets.jit_compiled(tuned) == 2  # compiled late, with the stage hook off: counted
    kernel_sets.use(copy)
    assert launch() == "kernel(4, 64)" and len(fn.compiled) == 4
    kernel_sets.use(stock)
    assert fn.device_caches is stock.jit[id(fn)] and deploy_configs._STATE["session"] is None
