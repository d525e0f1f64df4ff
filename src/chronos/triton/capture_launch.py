"""How a plain Triton launch reaches `JITFunction.run`, taken apart for the recorder (chronos.triton.capture).

Hand-written Triton code launches as `kernel[grid](*args, BLOCK=bs, num_warps=nw, num_stages=ns)`, and
`@triton.autotune` / `@triton.heuristics` wrappers add their config's values the same way: `run` receives the
kernel's parameters and the compile options (num_warps, num_stages, num_ctas, maxnreg, enable_fp_fusion,
...) mixed in one `**kwargs`. Binding all of them to the kernel's signature raises (PTX_NOTES), so the
recorder splits them first: parameters are bound, options are recorded (they shaped the PTX that capture
reads from the cache, and a recompile must pass them again).

The autotuner benchmarks every config at the first launch of each key: those launches are not the
workload's, so they are counted apart and not recorded; the launch that follows runs the config it chose,
and is recorded with that config and with the autotuner's `reset_to_zero` / `restore_value` arguments.
"""

from __future__ import annotations

import threading

_TLS = threading.local()

UNSUPPORTED = {
    "num_ctas": lambda v: v not in (None, 1),
    "launch_cooperative_grid": bool,
    "launch_pdl": bool,
}
"""Options the measurement runner cannot launch as Triton would (clusters, cooperative or programmatic
dependent launches): such a launch is dropped with this reason, never measured wrongly."""


def split_kwargs(jit_fn, kwargs: dict) -> tuple[dict, dict]:
    """(the kernel's own keyword arguments, the launch/compile options) of one `run(**kwargs)`."""
    names = set(jit_fn.arg_names)
    params = {k: v for k, v in kwargs.items() if k in names}
    options = {k: v for k, v in kwargs.items() if k not in names}
    return params, options


def plain_values(values: dict) -> dict:
    """Options or constexprs as JSON values, sorted (a value JSON cannot hold becomes its repr)."""
    return {str(k): v if isinstance(v, (bool, int, float, str)) or v is None else repr(v)
            for k, v in sorted(values.items(), key=lambda kv: str(kv[0]))}


def unsupported(options: dict) -> str | None:
    """Why a launch with these options cannot become a spec, or None."""
    bad = [f"{k}={options[k]!r}" for k, test in UNSUPPORTED.items() if k in options and test(options[k])]
    if bad:
        return f"launch option {', '.join(bad)} is not supported by the measurement runner"
    return None


# ------------------------------------------------------------------ the autotuner around a launch
def benchmarking() -> bool:
    """True while an autotuner benchmarks its configs on this thread."""
    return getattr(_TLS, "bench", 0) > 0


def autotune_context() -> dict | None:
    """The innermost autotuner running on this thread, as the record keeps it, or None."""
    stack = getattr(_TLS, "tuners", [])
    if not stack:
        return None
    tuner = stack[-1]
    best = getattr(tuner, "best_config", None)
    return {
        "configs": len(getattr(tuner, "configs", ())),
        "key": list(getattr(tuner, "keys", ())),
        "best_config": str(best) if best is not None else None,
        "reset_to_zero": list(getattr(tuner, "reset_to_zero", ()) or ()),
        "restore_value": list(getattr(tuner, "restore_value", ()) or ()),
        "user_pre_hook": bool(getattr(tuner, "user_defined_pre_hook", False)),
        "user_post_hook": bool(getattr(tuner, "user_defined_post_hook", False)),
        "config_pre_hook": getattr(best, "pre_hook", None) is not None,
    }


def _autotuner_run(orig):
    def run(self, *args, **kwargs):
        stack = _TLS.__dict__.setdefault("tuners", [])
        stack.append(self)
        try:
            return orig(self, *args, **kwargs)
        finally:
            stack.pop()

    run.__chronos_capture__ = True
    return run


def _autotuner_bench(orig):
    def bench(self, *args, **kwargs):
        _TLS.bench = getattr(_TLS, "bench", 0) + 1
        try:
            return orig(self, *args, **kwargs)
        finally:
            _TLS.bench -= 1

    bench.__chronos_capture__ = True
    return bench


def patch_autotuner(mod) -> None:
    """Wrap `Autotuner.run` (which config runs) and `Autotuner._bench` (its benchmark launches)."""
    cls = mod.Autotuner
    if not getattr(cls.run, "__chronos_capture__", False):
        cls.run = _autotuner_run(cls.run)
    if hasattr(cls, "_bench") and not getattr(cls._bench, "__chronos_capture__", False):
        cls._bench = _autotuner_bench(cls._bench)
