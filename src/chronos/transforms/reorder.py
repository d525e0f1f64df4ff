"""reorder_cp/il/lf/sl: list scheduling inside each region between ordering points.

A region is a maximal run of ordinary instructions inside one basic block: labels, branches, barriers,
fences, atomics, async-copy/mbarrier/wgmma ops, warp-synchronous collectives, inline-asm and scope
boundaries, declarations and timer reads (analysis.is_ordering_point) stay exactly where they are, so every
memory op keeps the same pair of ordering points around it. Inside a region the schedule is a topological
order of a dependency DAG: register RAW/WAR/WAW (vector elements, predicates, guards) and memory order
between any store and every access it may alias (same state space, or generic against global/shared/local).
`.loc` lines and comments travel with the instruction that follows them.

Heuristics (ties broken by original order, so the result is deterministic):
- cp (critical path): longest latency-weighted path to the end of the region first;
- il (interleave): alternate loads and non-loads, so that compute hides load latency;
- lf (loads first): every ready load before anything else;
- sl (stores last): stores only when nothing else is ready.
"""

from __future__ import annotations

import heapq

from chronos.errors import NotApplicable, UnknownActionError
from chronos.ptx.analysis import defs_uses, is_ordering_point, memory_op
from chronos.ptx.ir import Comment, Directive, Function, Instruction, Module, Statement
from chronos.transforms.base import rewrite_bodies

_ALIASING = {"global", "shared", "local", "generic"}
_SFU = {"ex2", "lg2", "rcp", "sqrt", "rsqrt", "sin", "cos", "tanh"}


def latency(ins: Instruction, mem=None) -> int:
    """A coarse latency model (cycles) used only to rank critical paths."""
    if mem is not None:
        if mem.kind in ("load", "prefetch"):
            return {"global": 400, "generic": 400, "local": 400, "shared": 30}.get(mem.space, 10)
        return 1
    if ins.op in _SFU:
        return 20
    if ins.op in ("div", "rem"):
        return 40
    return 4


def _may_alias(a: str, b: str) -> bool:
    return a == b or ("generic" in (a, b) and a in _ALIASING and b in _ALIASING)


_SPACES = ("global", "shared", "local", "generic", "param", "const")
_ALIASES = {a: tuple(b for b in _SPACES if _may_alias(a, b)) for a in _SPACES}


def _register_deps(instrs: list[Instruction], preds: list[set[int]]) -> None:
    """Add register RAW/WAW/WAR dependencies to `preds`."""
    last_def: dict[str, int] = {}
    uses_since_def: dict[str, list[int]] = {}
    for j, ins in enumerate(instrs):
        d, u = defs_uses(ins)
        for r in u:
            if r in last_def:
                preds[j].add(last_def[r])  # RAW
        for r in d:
            if r in last_def:
                preds[j].add(last_def[r])  # WAW
            preds[j].update(uses_since_def.get(r, ()))  # WAR
        for r in u:
            uses_since_def.setdefault(r, []).append(j)
        for r in d:
            last_def[r] = j
            uses_since_def[r] = []


def _memory_deps(mems: list, preds: list[set[int]]) -> None:
    """Add memory-order dependencies to `preds`: a store after every access it may alias, and every access
    after the last store it may alias."""
    last_store: dict[str, int] = {}
    loads_since: dict[str, list[int]] = {}
    for j, mem in enumerate(mems):
        if mem is None:
            continue
        spaces = _ALIASES.get(mem.space, (mem.space,))
        is_load = mem.kind in ("load", "prefetch")
        for c in spaces:
            if c in last_store:
                preds[j].add(last_store[c])
            if not is_load:
                preds[j].update(loads_since.get(c, ()))
        if is_load:
            loads_since.setdefault(mem.space, []).append(j)
        else:
            last_store[mem.space] = j
            loads_since[mem.space] = []


def dependency_dag(instrs: list[Instruction], mems: list | None = None) -> list[set[int]]:
    """preds[j] = indices i < j that must stay before j (register and memory dependencies)."""
    if mems is None:
        mems = [memory_op(i) for i in instrs]
    preds: list[set[int]] = [set() for _ in instrs]
    # Each pass touches preds[j] only while visiting j: register dependencies go in before memory ones.
    _register_deps(instrs, preds)
    _memory_deps(mems, preds)
    for j in range(len(preds)):
        preds[j].discard(j)
    return preds


def _priority_keys(instrs: list[Instruction], mems: list, loads: list[bool], succs: list[list[int]],
                   heuristic: str) -> list[tuple[int, int]]:
    """Each instruction's ready-list priority under `heuristic` (smallest first; ties by original order)."""
    n = len(instrs)
    if heuristic == "cp":
        height = [0] * n
        for i in range(n - 1, -1, -1):
            below = succs[i]
            height[i] = latency(instrs[i], mems[i]) + (max([height[s] for s in below]) if below else 0)
        return [(-height[i], i) for i in range(n)]
    if heuristic == "lf":
        return [(0 if loads[i] else 1, i) for i in range(n)]
    if heuristic == "sl":
        return [(1 if mems[i] is not None and not loads[i] else 0, i) for i in range(n)]
    if heuristic == "il":
        return [(0, i) for i in range(n)]
    raise UnknownActionError(f"unknown reorder heuristic {heuristic!r}")


def _list_schedule(preds: list[set[int]], succs: list[list[int]], key: list[tuple[int, int]],
                   loads: list[bool], interleave: bool) -> list[int]:
    """Pop the best ready instruction until all are scheduled; with `interleave`, alternate loads and
    non-loads while both are ready."""
    n = len(preds)
    waiting = [len(p) for p in preds]
    ready = [[], []]  # il keeps loads (0) and the rest (1) apart; the others use ready[0] only
    for i in range(n):
        if waiting[i] == 0:
            heapq.heappush(ready[1 if interleave and not loads[i] else 0], (key[i], i))
    order: list[int] = []
    want_load = True
    while len(order) < n:
        if interleave:
            side = 0 if (want_load and ready[0]) or not ready[1] else 1
            want_load = side == 1
        else:
            side = 0
        _, i = heapq.heappop(ready[side])
        order.append(i)
        for s in succs[i]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready[1 if interleave and not loads[s] else 0], (key[s], s))
    return order


def schedule(instrs: list[Instruction], heuristic: str) -> list[int]:
    """A topological order of the region's DAG chosen by `heuristic` (cp, il, lf, sl)."""
    n = len(instrs)
    mems = [memory_op(i) for i in instrs]
    loads = [m is not None and m.kind in ("load", "prefetch") for m in mems]
    preds = dependency_dag(instrs, mems)
    succs: list[list[int]] = [[] for _ in range(n)]
    for j, ps in enumerate(preds):
        for i in ps:
            succs[i].append(j)
    key = _priority_keys(instrs, mems, loads, succs, heuristic)
    return _list_schedule(preds, succs, key, loads, heuristic == "il")


def _attached(s: Statement) -> bool:
    """Statements that travel with the next instruction instead of bounding a region."""
    return ((isinstance(s, Comment) and s.inline_asm is None)
            or (isinstance(s, Directive) and s.keyword == ".loc"))


def _movable(s: Statement) -> bool:
    return isinstance(s, Instruction) and not is_ordering_point(s)


def reorder(module: Module, heuristic: str) -> Module:
    changed = False

    def rewrite(fn: Function) -> list[Statement] | None:
        nonlocal changed
        body = fn.body or []
        free = [_movable(st) or _attached(st) for st in body]  # computed once: the analyses are not free
        out: list[Statement] = []
        i = 0
        while i < len(body):
            if not free[i]:
                out.append(body[i])
                i += 1
                continue
            units: list[list[Statement]] = []  # each: attached statements + one instruction
            pending: list[Statement] = []
            while i < len(body) and free[i]:
                pending.append(body[i])
                if isinstance(body[i], Instruction):
                    units.append(pending)
                    pending = []
                i += 1
            order = schedule([u[-1] for u in units], heuristic) if len(units) > 1 else list(range(len(units)))
            changed |= order != sorted(order)
            for k in order:
                out.extend(units[k])
            out.extend(pending)
        return out

    result = rewrite_bodies(module, rewrite)
    if not changed:
        raise NotApplicable(f"the {heuristic} schedule equals the current order in every region")
    return result
