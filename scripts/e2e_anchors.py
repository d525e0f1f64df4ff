"""Inductor's tuners beside stock and Chronos v3 at the step (#28 item 5; `scripts/e2e_one_process.py
--anchors`), each the whole workload compiled again in the same process with the tuner's options.

A tuner benchmarks its candidates while it compiles, so one compile is one draw of it: bert's coordesc step
measured 0.985–1.025 x stock over five runs (H100, 2026-12-06/07). `--anchor-draws N` compiles each tuner N
times in one run, each draw with caches of its own (Inductor's cache directory and in-memory caches fresh:
no draw reuses another's benchmarked choices, nor the first tuner's GEMM choices the second's), so Chronos v3
is judged against several draws side by side, not one. Draw 1 keeps the tuner's name, draw k is
`<tuner>_draw<k>` (chronos.report.anchor_runs.tuner_of reads it back).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable

from e2e import build_phases, summarize

from chronos.report.anchor_runs import DRAW, tuner_of, v3_standing

ANCHORS = {"max_autotune": {"max_autotune": True},
           "coordesc": {"max_autotune": True, "coordinate_descent_tuning": True}}
"""Inductor's own tuners, each the whole workload compiled again with these options: the step is where they
compare with stock and Chronos v3 (per kernel they launch other kernels: other fusions, templates whose block
sizes are folded into their source)."""


def anchor_runs(tuners: list[str], draws: int) -> list[str]:
    """The run name of every draw of every tuner: draw 1 keeps the tuner's name."""
    if draws < 1:
        raise SystemExit(f"e2e_one_process: --anchor-draws {draws}: at least 1")
    return [t if k == 1 else f"{t}{DRAW}{k}" for t in tuners for k in range(1, draws + 1)]


@contextlib.contextmanager
def compiled_with(options: dict):
    """Every torch.compile the workload calls while it is built here gets these Inductor options: a backend
    of its own, so that dynamo compiles the workload afresh rather than serving stock's graphs."""
    import torch

    plain = torch.compile

    def with_options(*args, **kwargs):
        kwargs["options"] = {**kwargs.get("options", {}), **options}
        return plain(*args, **kwargs)

    torch.compile = with_options
    try:
        yield
    finally:
        torch.compile = plain


@contextlib.contextmanager
def own_caches():
    """An Inductor cache directory of its own (coordesc's best configs and the GEMM autotune results live
    there) and Inductor's in-memory caches cleared before and after: the draw benchmarks its choices anew.
    Yields the options that make its compile a backend of its own: torch.compile's Inductor backends with
    equal options are equal, and dynamo would serve a second draw the first one's graphs; the draw's own
    (unused: tracing is off) trace directory tells them apart."""
    from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir

    scratch = tempfile.mkdtemp(prefix="chronos-e2e1-draw-")
    with temporary_cache_dir(scratch):
        yield {"trace.debug_dir": scratch}


def raise_recompile_limit(runs: int) -> None:
    """Each anchor compiles the workload's functions again: stock's and the anchors' graphs together pass
    dynamo's default of 8 per function, past which it silently runs the function eagerly (flex's decode at
    14x stock's time, H100, 2026-12-05)."""
    import torch._dynamo

    limit = 8 * (1 + runs)
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, limit)
    if hasattr(torch._dynamo.config, "accumulated_recompile_limit"):
        torch._dynamo.config.accumulated_recompile_limit = max(
            torch._dynamo.config.accumulated_recompile_limit, 32 * limit)


def build_anchors(workloads, workload: str, runs: list[str], digests: dict,
                  digest_of: Callable[[dict], dict]) -> tuple[dict, dict]:
    """Each anchor run's phases (the workload built and compiled again under its tuner, same seed, caches
    of its own), warmed up, and whether its outputs equal stock's bit for bit (its digests, `digest_of` its
    phases, added to `digests`)."""
    import torch

    raise_recompile_limit(len(runs))
    built, bitwise = {}, {}
    for name in runs:
        with own_caches() as own, compiled_with(ANCHORS[tuner_of(name)] | own):
            torch.manual_seed(0)
            phases = build_phases(workloads, workload)
            for _ in range(2):  # compile, autotune, settle
                for fn in phases.values():
                    fn()
            torch.cuda.synchronize()
        built[name] = phases
        digests[name] = digest_of(phases)
        bitwise[name] = digests[name] == digests["stock"]
        print(f"anchor {name}: built; bitwise {bitwise[name]}", flush=True)
    return built, bitwise


def anchor_verdicts(ratios: Callable, times: dict, phases: dict, bitwise: dict[str, bool]) -> dict:
    """Per anchor run: stock / anchor (the tuner's own speedup) and anchor / tuned (Chronos v3 over it), per
    step and per phase, and whether its outputs kept stock's bits. `ratios(times, a, b, phase)`: per round
    a / b."""
    out = {}
    for a, same in bitwise.items():
        out[a] = {"speedup": summarize(ratios(times, "stock", a)),
                  "v3_over": summarize(ratios(times, a, "tuned")), "bitwise": same,
                  "per_phase": {ph: {"speedup": summarize(ratios(times, "stock", a, ph)),
                                     "v3_over": summarize(ratios(times, a, "tuned", ph))} for ph in phases}}
    return out


def draws_verdict(anchors: dict) -> dict:
    """Per tuner with more than one draw: each draw's stock / draw, and in how many draws Chronos v3 was
    ahead (draw / v3 interval above 1), behind (below 1) or level."""
    out: dict = {}
    for name, v in anchors.items():
        out.setdefault(tuner_of(name), []).append(v)
    verdict = {}
    for tuner, vs in out.items():
        if len(vs) < 2:
            continue
        verdict[tuner] = {"draws": len(vs), "step_speedup": [v["speedup"]["median"] for v in vs],
                          **v3_standing(vs)}
    return verdict
