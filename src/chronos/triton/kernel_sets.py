"""Two kernel sets in one process (#28 item 6): every Inductor kernel of a workload compiled once stock and
once tuned (a tuned DB deployed while it compiles), and a switch between them, so that end-to-end steps can
alternate between the sets in the same process, on the same memory and the same clocks.

Worker processes of one workload differ from each other by up to ~10% in step time (H200, A/A 0.894 between
two stock workers): nothing below that can be seen across processes. Here the sets share everything but
their binaries. `track()` registers every Inductor autotuner made from then on (its `__init__` is wrapped
when its module loads); after a warm-up has compiled the stock kernels, `build(db)` compiles each
autotuner's running config again — the tuned config where the DB holds one, the tuned PTX through the
stage hook — and keeps the launchers apart; `use(set)` points every autotuner at that set's launchers.
Hand-written Triton kernels (a `JITFunction`, whose `run` is wrapped alike) keep their compiled kernels
in a per-function cache: a set gives each its own, filled by running the workload once (`warm`) with the
DB deployed, and `use(set)` swaps the caches and the set's config deployment (a launch maps its stock
options to the tuned ones before its cache lookup).
A set built with no DB is a second copy of stock: alternating it with stock is the A/A control of the
same protocol.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from chronos.triton.patch_on_import import PatchOnImport, after_init, wrap_method

_STATE: dict = {"tuners": None, "jit": None, "jit_stock": {}, "finder": None}
"""tuners: the Inductor autotuners made since track(); jit: id -> every JIT function run since (held: ids
stay unique); jit_stock: id -> its cache as the warm-up filled it."""


def _register(autotuner) -> None:
    if _STATE["tuners"] is not None:
        _STATE["tuners"].add(autotuner)


def _wrap(mod) -> None:
    after_init(mod.CachingAutotuner, "__chronos_sets__", _register)


def _wrap_jit(mod) -> None:
    def make(run):
        def run_registered(self, *args, **kwargs):
            if _STATE["jit"] is not None and id(self) not in _STATE["jit"]:
                _STATE["jit"][id(self)] = self
            return run(self, *args, **kwargs)
        return run_registered

    wrap_method(mod.JITFunction, "run", "__chronos_sets__", make)


def track(on_error=lambda module: None) -> weakref.WeakSet:
    """Register every Inductor autotuner made and every JIT function run from now on (call before the
    workload compiles)."""
    if _STATE["tuners"] is None:
        _STATE["tuners"], _STATE["jit"] = weakref.WeakSet(), {}
    if _STATE["finder"] is None:
        _STATE["finder"] = PatchOnImport({"torch._inductor.runtime.triton_heuristics": _wrap,
                                          "triton.runtime.jit": _wrap_jit}, on_error)
    _STATE["finder"].install()
    return _STATE["tuners"]


@dataclass
class KernelSet:
    name: str
    launchers: dict = field(default_factory=dict)
    """id(autotuner) -> its launchers in this set."""
    tuners: list = field(default_factory=list)
    configs: dict = field(default_factory=dict)
    """kernel name -> the config label compiled, where it is not the running one."""
    jit: dict = field(default_factory=dict)
    """id(JIT function) -> its compiled-kernel cache in this set."""
    session: object = None
    """The set's config deployment (chronos.triton.deploy_configs.ConfigSession) for its JIT launches."""


def _running(tuner):
    """The config an autotuner runs (after its warm-up it holds exactly one launcher)."""
    if len(tuner.launchers) != 1:
        raise RuntimeError(f"{tuner.fn.__name__}: {len(tuner.launchers)} launchers after the warm-up "
                           "(autotuning not settled): run the phases once more before building sets")
    return tuner.launchers[0].config


def capture_stock(name: str = "stock") -> KernelSet:
    """The launchers every tracked autotuner holds now: the warm-up's stock kernels."""
    s = KernelSet(name)
    for t in list(_STATE["tuners"] or ()):
        if t.launchers:
            _running(t)
            s.launchers[id(t)] = list(t.launchers)
            s.tuners.append(t)
    s.jit = {i: fn.device_caches for i, fn in (_STATE["jit"] or {}).items()}
    _STATE["jit_stock"] = dict(s.jit)
    return s


def build(name: str, stock: KernelSet, db=None, enable=None, disable=None, warm=None) -> KernelSet:
    """Every autotuner of `stock` compiled again into a set of its own: with `db` deployed (enable(db) and
    disable() of chronos.triton, passed in by the caller) its tuned configs and PTX, without one a copy of
    stock. Where stock holds JIT functions, `warm()` (every phase run once) fills each one's new cache.
    The autotuners and JIT functions are left on stock."""
    from chronos.triton import deploy_configs

    s = KernelSet(name)
    if db is not None:
        enable(db)
    try:
        session = deploy_configs._STATE["session"]
        for t in stock.tuners:
            cfg = stock.launchers[id(t)][0].config
            compiler, chosen = session.compile_plan(t, cfg) if session is not None else (t, cfg)
            result = compiler._precompile_config(chosen)
            s.launchers[id(t)] = [result.make_launcher()]
            s.tuners.append(t)
            if compiler is not t:
                s.configs[t.fn.__name__] = f"row blocks of the edited template, num_warps={chosen.num_warps}"
            elif chosen is not cfg:
                s.configs[t.fn.__name__] = f"{chosen.kwargs}, num_warps={chosen.num_warps}"
        if stock.jit and warm is not None:
            s.jit, s.session = _jit_caches(warm), session
    finally:
        if db is not None:
            disable()
        use(stock)
    return s


def _jit_caches(warm) -> dict:
    """Each JIT function's compiled kernels in a new cache, filled by `warm()` (as deployed now)."""
    from collections import defaultdict

    fns = list((_STATE["jit"] or {}).values())
    for fn in fns:
        fn.device_caches = defaultdict(fn.create_binder)
    warm()
    return {id(fn): fn.device_caches for fn in fns}


def jit_compiled(s: KernelSet) -> int:
    """Kernels held in the set's JIT caches. One compiled after build() (a launch its warm pass did not
    see) was compiled with the stage hook off: its PTX is Triton's, not the tuned one."""
    return sum(len(per_device[0]) for caches in s.jit.values() for per_device in caches.values())


def use(s: KernelSet) -> None:
    """Point every autotuner of the set at the set's launchers (and drop a launcher Inductor cached for its
    fast path, where its version has one), every JIT function at the set's cache (stock's where the set
    has none: an anchor's) and JIT launches at the set's config deployment."""
    from chronos.triton import deploy_configs

    for t in s.tuners:
        t.launchers = list(s.launchers[id(t)])
        if getattr(t, "_cached_launcher", None) is not None:
            t._cached_launcher = None
    for i, fn in (_STATE["jit"] or {}).items():
        caches = s.jit.get(i, _STATE["jit_stock"].get(i))
        if caches is not None:
            fn.device_caches = caches
    deploy_configs._STATE["session"] = s.session
