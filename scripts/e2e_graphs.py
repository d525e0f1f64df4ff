"""CUDA graphs of a workload's phases, one per kernel set (#28 item 6: `scripts/e2e_one_process.py --graphs`).

Steps launched from Python carry the host's time too: bert's 1 ms inference step and 5 ms train step swing by
+-5% between kernel sets taking turns in one process (H100, 2026-12-05), so its step ratio cannot resolve a
few percent. A CUDA graph of a phase, captured while a kernel set is in use, holds that set's kernels and
replays them with no host work between launches: the replay's time is the GPU's. Each set (and each anchor)
gets its own graph of every phase; a phase whose capture fails for any of them (a host sync inside it, an
op that cannot be captured) stays eager for all of them, and the error is said.
"""

from __future__ import annotations

from collections.abc import Callable


def capture(fn: Callable):
    """A CUDA graph of one call of `fn` and the tensors it returned (the graph's static outputs: a replay
    overwrites them). One call on a side stream first, as the capture itself runs there."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    torch.cuda.synchronize()
    return graph, out


def graph_runs(runs: dict, select: Callable[[str], None]) -> tuple[dict, dict, dict]:
    """Per run (a kernel set or an anchor: name -> its phases), each phase replaced by its graph's replay.

    `select(name)` puts that run's kernels in use before its captures. Returns the replacing runs, the
    graphs' static outputs ({run: {phase: tensors}}) and the phases left eager ({phase: why})."""
    import torch

    first = next(iter(runs.values()))
    graphs: dict = {name: {} for name in runs}
    eager: dict[str, str] = {}
    for phase in first:
        for name, phases in runs.items():
            select(name)
            try:
                graphs[name][phase] = capture(phases[phase])
            except Exception as e:  # noqa: BLE001 - a phase that cannot be captured is timed eagerly
                eager[phase] = f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                torch.cuda.synchronize()
                break
        if phase in eager:
            for g in graphs.values():
                g.pop(phase, None)
    replaying = {name: {ph: (graphs[name][ph][0].replay if ph in graphs[name] else fn)
                        for ph, fn in phases.items()} for name, phases in runs.items()}
    outs = {name: {ph: g[1] for ph, g in graphs[name].items()} for name in runs}
    return replaying, outs, eager


def replays_exact(runs: dict, outs: dict, eager_digests: dict, digest: Callable, reseed: Callable) -> dict:
    """Per run and captured phase: does one replay (RNG seeded as the eager digest was) give the eager call's
    outputs bit for bit? A graph that did not would time something other than the step it stands for."""
    import torch

    got = {}
    for name, phases in outs.items():
        for phase, tensors in phases.items():
            reseed()
            runs[name][phase]()
            torch.cuda.synchronize()
            got.setdefault(name, {})[phase] = digest(tensors) == eager_digests[name][phase]
    return got
