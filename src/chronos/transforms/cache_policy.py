"""Action space v2 (issue #14), cache policy hints: on loads an L1 eviction priority, an L2 cache policy or an
L2 prefetch size — chosen separately for loads whose data the kernel reads again (`reread`) and for the
others (`streaming`) — and on stores an L1 eviction priority.

    l1_eviction(module, "evict_last", "reread")   ld.global.L1::evict_last.b32 ...
    l2_policy(module, "evict_first", "streaming") createpolicy.fractional.L2::evict_first.b64 %chronos_pol,
                                                  1.0; ld.global.L2::cache_hint.b32 ..., [a], %chronos_pol;
    prefetch_size(module, "256B", "all")          ld.global.L2::256B.b32 ...
    store_eviction(module, "no_allocate")         st.global.L1::no_allocate.b32 [a], ...

All three are performance hints (PTX ISA, "Data Movement and Conversion Instructions: ld"): they never
change what a load returns. Eligible loads are weak `ld.global` without `.nc` (for an L1 priority also
without a cache operator: ptxas says they "cannot be combined"; PTX_NOTES.md) that do not already carry the
qualifier being set: a hint the producer chose (Triton's eviction_policy) is never overwritten. The
qualifiers are written in the ISA's order `ld.global{.cop}{.L1::*}{.L2::cache_hint}{.L2::<size>}{.vec}.type`;
`.L2::cache_hint` on sm_89/sm_90 takes the 64-bit policy that one `createpolicy` at the entry's start makes.

Which loads are re-read: each register's pointer parameters are followed through its definitions
(flow-insensitive, to a fixed point); the loads from one parameter are re-read when they stand in more than
one loop region (the blocks between a backward branch and its target, or none), as in a two-pass
reduction's second sweep over the row. One sweep (however unrolled) is streaming.
"""

from __future__ import annotations

from chronos.actions import L1_EVICTIONS as L1_POLICIES
from chronos.actions import L2_EVICTIONS as L2_POLICIES
from chronos.actions import PREFETCH_SIZES
from chronos.errors import NotApplicable
from chronos.ptx.analysis import basic_blocks, defs_uses, memory_op
from chronos.ptx.ir import Addr, Function, Imm, Instruction, Module, Reg, RegDecl, Statement
from chronos.transforms.base import rewrite_bodies
from chronos.transforms.cache_hints import LOAD_OPS, STORE_OPS

LOAD_CLASSES = ("reread", "streaming", "all")
POLICY_REG = "%chronos_pol"
_COPS = set(LOAD_OPS) | set(STORE_OPS)  # cache operators of ld and st


# ------------------------------------------------------------------ which loads are re-read
def param_origins(fn: Function) -> dict[str, frozenset[str]]:
    """Register -> the pointer parameters its value derives from through arithmetic (every definition). A
    value loaded from memory derives from none: an index read from a tensor does not make the address it
    feeds a pointer into that tensor."""
    pointers = {p.name for p in fn.params if p.is_ptr or p.dtype in (".u64", ".b64", ".s64")}
    origins: dict[str, set[str]] = {}
    body = [s for s in fn.body or [] if isinstance(s, Instruction)]
    changed = True
    while changed:
        changed = False
        for ins in body:
            defs, uses = defs_uses(ins)
            if not defs:
                continue
            src: set[str] = set()
            if ins.op in ("ld", "ldu", "atom") and "param" not in ins.mods:
                uses = ()
            elif ins.op == "ld":
                src |= {o.base.name for o in ins.operands
                        if type(o) is Addr and getattr(o.base, "name", None) in pointers}
            for u in uses:
                src |= origins.get(u, set())
            for d in defs:
                if not src <= origins.setdefault(d, set()):
                    origins[d] |= src
                    changed = True
    return {r: frozenset(p) for r, p in origins.items()}


def _loop_of(fn: Function) -> list[int | None]:
    """Per body statement, the innermost loop region holding it (its backward branch's target block), or
    None outside every loop."""
    blocks = basic_blocks(fn)
    loops = [(t, b.index) for b in blocks for t in b.succs if t <= b.index]  # back edges, in layout order
    region = [None] * len(fn.body or [])
    for b in blocks:
        inner = [(h, e) for h, e in loops if h <= b.index <= e]
        if inner:
            head = min(inner, key=lambda he: he[1] - he[0])[0]
            for i in range(b.start, b.end):
                region[i] = head
    return region


def load_classes(fn: Function) -> dict[int, str]:
    """Body index of every global load -> "reread" or "streaming"."""
    origins, region = param_origins(fn), _loop_of(fn)
    sites: dict[frozenset[str], list[int]] = {}
    for i, s in enumerate(fn.body or []):
        mem = memory_op(s) if isinstance(s, Instruction) else None
        if mem is not None and mem.kind == "load" and mem.space == "global" and mem.addr is not None:
            base = mem.addr.base
            sites.setdefault(origins.get(base.name, frozenset()) if isinstance(base, Reg) else frozenset(),
                             []).append(i)
    out = {}
    for params, idx in sites.items():
        reread = bool(params) and len({region[i] for i in idx}) > 1
        out.update({i: "reread" if reread else "streaming" for i in idx})
    return out


# ------------------------------------------------------------------ the rewrites
def _eligible(ins: Instruction, l1: bool, op: str = "ld") -> bool:
    """A weak, coherent ld.global (st.global); for an L1 eviction priority also one without a cache operator
    (the L2 qualifiers combine with one)."""
    mem = memory_op(ins)
    return (mem is not None and ins.op == op and mem.space == "global" and not mem.volatile
            and "nc" not in ins.mods and not (l1 and _COPS & set(ins.mods)))


def _with_mods(ins: Instruction, l1: str | None = None, hint: bool = False, size: str | None = None):
    """The load with the given qualifiers added in the ISA's order, or None when one is already there."""
    mods = list(ins.mods)
    has_l1 = any(m.startswith("L1::") for m in mods)
    has_hint = "L2::cache_hint" in mods
    has_size = any(m in {f"L2::{s}" for s in PREFETCH_SIZES} for m in mods)
    if (l1 and has_l1) or (hint and has_hint) or (size and has_size):
        return None
    head = mods[: mods.index("global") + 1]
    head += [m for m in mods[len(head):len(head) + 1] if m in _COPS]  # {.cop}{.L1::*}{.L2::*}
    quals = [m for m in mods[len(head):] if m.startswith(("L1::", "L2::"))]
    tail = [m for m in mods[len(head):] if m not in quals]
    quals += [f"L1::{l1}"] * bool(l1) + ["L2::cache_hint"] * hint + [f"L2::{size}"] * bool(size)
    quals.sort(key=lambda m: (not m.startswith("L1::"), m != "L2::cache_hint"))
    return ins.with_opcode(".".join([ins.op, *head, *quals, *tail]))


def _rewrite(module: Module, pick, what: str, make) -> Module:
    """`make(s)` for the body statements `pick(fn)` names (indices); NotApplicable when none changes."""
    changed = 0

    def rewrite(fn: Function) -> list[Statement]:
        nonlocal changed
        chosen = pick(fn)
        out: list[Statement] = []
        for i, s in enumerate(fn.body or []):
            new = make(s) if i in chosen else None
            changed += new is not None
            out.append(new or s)
        return out

    result = rewrite_bodies(module, rewrite)
    if not changed:
        raise NotApplicable(f"no eligible {what}")
    return result


def _rewrite_loads(module: Module, which: str, what: str, make, *, l1: bool = False) -> Module:
    if which not in LOAD_CLASSES:
        raise ValueError(f"load class {which!r}; one of {', '.join(LOAD_CLASSES)}")

    def pick(fn: Function) -> set[int]:
        return {i for i, c in load_classes(fn).items() if which in ("all", c) and _eligible(fn.body[i], l1)}

    return _rewrite(module, pick, f"{which} ld.global would take {what}", make)


def store_eviction(module: Module, policy: str) -> Module:
    """An L1 eviction priority on every eligible st.global (`no_allocate`: written data the kernel does not
    read back need not take L1 lines)."""
    if policy not in L1_POLICIES:
        raise ValueError(f"L1 policy {policy!r}; one of {', '.join(L1_POLICIES)}")

    def pick(fn: Function) -> set[int]:
        body = fn.body or []
        return {i for i, s in enumerate(body) if isinstance(s, Instruction) and _eligible(s, True, "st")}

    return _rewrite(module, pick, f"st.global would take .L1::{policy}", lambda s: _with_mods(s, l1=policy))


def l1_eviction(module: Module, policy: str, which: str = "all") -> Module:
    if policy not in L1_POLICIES:
        raise ValueError(f"L1 policy {policy!r}; one of {', '.join(L1_POLICIES)}")
    return _rewrite_loads(module, which, f".L1::{policy}", lambda s: _with_mods(s, l1=policy), l1=True)


def prefetch_size(module: Module, size: str, which: str = "all") -> Module:
    if size not in PREFETCH_SIZES:
        raise ValueError(f"prefetch size {size!r}; one of {', '.join(PREFETCH_SIZES)}")
    return _rewrite_loads(module, which, f".L2::{size}", lambda s: _with_mods(s, size=size))


def l2_policy(module: Module, policy: str, which: str = "all") -> Module:
    """`.L2::cache_hint` with one fractional L2 policy made at the entry's start (sm_80+)."""
    if policy not in L2_POLICIES:
        raise ValueError(f"L2 policy {policy!r}; one of {', '.join(L2_POLICIES)}")

    def hinted(s: Instruction) -> Instruction | None:
        new = _with_mods(s, hint=True)
        return None if new is None else Instruction(new.opcode, [*new.operands, Reg(POLICY_REG)], new.pred,
                                                    new.pred_neg, new.line, origin="l2_policy")

    result = _rewrite_loads(module, which, f".L2::cache_hint ({policy})", hinted)
    make = Instruction(f"createpolicy.fractional.L2::{policy}.b64", [Reg(POLICY_REG), Imm("1.0")],
                       origin="l2_policy")

    def declare(fn: Function) -> list[Statement] | None:
        body = fn.body or []
        if not any(isinstance(s, Instruction) and Reg(POLICY_REG) in s.operands for s in body):
            return None
        first = next(i for i, s in enumerate(body) if isinstance(s, Instruction))
        return [RegDecl(".b64", [(POLICY_REG, None)]), *body[:first], make, *body[first:]]

    return rewrite_bodies(result, declare)

