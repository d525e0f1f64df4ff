"""Action space v2 (issue #14), loop transforms: unroll x2/x4 of single-block loops, remainder-safe.

    $L__BB0_2:                         $L__BB0_2:
        <body>                             <body>                  copy 1 (the original statements)
        @%p6 bra $L__BB0_2;                @!%p6 bra $L__chronos_unroll_exit0;
                                           <body>                  copy 2
                                           @%p6 bra $L__BB0_2;
                                       $L__chronos_unroll_exit0:

A loop qualifies when it is one basic block: a label, then straight-line code, then a guarded `bra` (or
`bra.uni`) back to that label. Copy k < factor ends with the back-branch's own test negated, branching to a
fresh label right after the loop; the last copy keeps the back-branch. Every original iteration boundary
keeps its exit test, evaluated on the predicate as that copy computed it, so the unrolled loop runs exactly
the iterations the original ran, for any trip count: no trip-count proof and no remainder loop are needed.
PTX registers may be written any number of times, so the copies reuse the body's registers verbatim.

Legal by construction, because each thread executes the same sequence of non-branch instructions with the
same operands as before, and which copy runs iteration k depends on k alone ((k-1) mod factor), never on the
thread. Barriers and warp collectives (bar.sync, shfl.sync, wgmma, mbarrier, cp.async groups, elect.sync)
are therefore replicated too: any set of threads that met at one barrier instruction in iteration k of the
original meets at the same copy of it in the unrolled loop, and count-based matching (non-aligned
`barrier.sync`, named barriers with a count) sees the same per-thread sequence of arrivals. A body whose
trip count differs between the threads of a CTA while it holds an aligned barrier (`bar.sync`) is already
undefined in the original (PTX ISA, "barrier": all threads must execute the same aligned barrier), so no
uniformity proof is needed. (A stricter rule — barriers only under `bra.uni` — would leave out every Triton
matmul and attention loop, whose back-branches are plain `bra`.)

Refused (the loop is left alone; NotApplicable when no loop of the module qualifies):
- a body holding another branch, a label that some instruction or directive of the function names (a
  branch target, a `.branchtargets` entry), `call`, `ret`, `exit` or `trap`: not one basic block, or a
  label would be duplicated. Labels nothing names (Triton's `$L__tmp<n>` debug-range markers, referenced
  only from `.section .debug_*`) stay in the first copy only;
- an unguarded back-branch (no exit test to replicate);
- declarations in the body outside a `{ }` scope (`.reg`, `.local`, `.shared`): they would be declared twice.
  `.loc` lines are copied; `.pragma` (LLVM's "nounroll") stays in the first copy, the loop's header;
- a body of more than MAX_BODY_INSTRUCTIONS instructions, or a result that would add more than
  MAX_ADDED_INSTRUCTIONS instructions to one function: ptxas time grows with the unrolled size, and
  unrolling a body that large buys nothing that its own instruction-level parallelism does not already give.
Whether the longer body fits the register budget is ptxas's to decide: `unroll` asks it (as set_maxnreg
does) and refuses a result it rejects, e.g. under a `.maxnreg` that some instruction cannot meet. A variant
that merely spills more is legal; whether it is faster is the policy's question (the census counts them).

A second unroll of the same kernel is refused: an unrolled loop holds a branch (its exit test), so it is no
longer a single-block loop.

Software pipelining (issuing iteration i+1's loads during iteration i) is not here. To be legal by
construction it needs, per hoisted load, the backward slice of its address and guard across the back-edge
(the induction update, Triton's mask `setp`s, the inline-asm `mov` of the default value) re-computed into
fresh registers and proven free of side effects, the loads guarded by the predicate that says iteration i+1
exists (which Triton computes only at the body's end, so it must be re-derived early from the next induction
value), the first iteration's loads peeled above the loop, and the carried values copied into the body's
registers at each iteration's start. An unguarded version would load past the end of a buffer on the last
iteration (a fault, not just a wasted load), so none is shipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from chronos.errors import NotApplicable
from chronos.ptx.ir import (
    Directive,
    Function,
    Instruction,
    Label,
    Module,
    RegDecl,
    ScopeClose,
    ScopeOpen,
    Statement,
    Sym,
)
from chronos.ptx.loop_trips import back_edges
from chronos.ptx.printer import emit
from chronos.transforms.base import rewrite_bodies
from chronos.transforms.register_budget import ptxas_verdict

FACTORS = (2, 4)
MAX_BODY_INSTRUCTIONS = 512
MAX_ADDED_INSTRUCTIONS = 8192
EXIT_PREFIX = "$L__chronos_unroll_exit"
_LEAVES = {"bra", "brx", "call", "ret", "exit", "trap"}  # control leaves the straight line


@dataclass(frozen=True)
class Loop:
    """A single-block loop: body[head] is its label, body[branch] the guarded back-branch."""

    head: int
    branch: int

    def inner(self, body: list[Statement]) -> list[Statement]:
        """The statements between the label and the back-branch."""
        return body[self.head + 1:self.branch]

    def size(self, body: list[Statement]) -> int:
        return sum(isinstance(s, Instruction) for s in self.inner(body))


def named_labels(fn: Function) -> set[str]:
    """Labels that an instruction operand or a directive in the body names (branch targets, tables)."""
    body = fn.body or []
    labels = {s.name for s in body if isinstance(s, Label)}
    named = {o.name for s in body if isinstance(s, Instruction) for o in s.operands if isinstance(o, Sym)}
    texts = " ".join(s.text for s in body if isinstance(s, Directive) and s.keyword != ".loc")
    return (named & labels) | {name for name in labels if name in texts}


def _refusal(body: list[Statement], loop: Loop, named: set[str]) -> str | None:
    """Why this backward branch's loop cannot be unrolled, or None."""
    if body[loop.branch].pred is None:
        return "its back-branch is unguarded (no exit test)"
    depth = 0
    for s in loop.inner(body):
        if isinstance(s, Instruction) and s.op in _LEAVES:
            return f"its body holds {s.op} (not one basic block)"
        if isinstance(s, Label) and s.name in named:
            return f"its body holds the branch target {s.name}"
        if isinstance(s, ScopeOpen):
            depth += 1
        elif isinstance(s, ScopeClose):
            depth -= 1
            if depth < 0:
                return "its body closes a scope it did not open"
        elif depth == 0 and (isinstance(s, RegDecl) or (
                isinstance(s, Directive) and s.keyword not in (".loc", ".pragma"))):
            return "its body declares something (a copy would declare it twice)"
    if depth:
        return "its body opens a scope it does not close"
    n = loop.size(body)
    if n > MAX_BODY_INSTRUCTIONS:
        return f"its body has {n} instructions (more than {MAX_BODY_INSTRUCTIONS})"
    return None


def single_block_loops(fn: Function) -> tuple[list[Loop], list[str]]:
    """The function's unrollable loops in layout order, and why each other backward branch's loop is not."""
    body = fn.body or []
    edges = back_edges(fn)
    named = named_labels(fn) if edges else set()
    loops, refused = [], []
    for edge in edges:
        loop = Loop(edge.head, edge.branch)
        reason = _refusal(body, loop, named)
        if reason is None:
            loops.append(loop)
        else:
            refused.append(f"the loop at {body[edge.head].name}: {reason}")
    return loops, refused


def _copy(inner: list[Statement]) -> list[Statement]:
    """One more copy of a loop body: new Instruction objects (the originals stay where they are, once), the
    body's labels and pragmas left out; comments, `.loc` lines and what a `{ }` scope declares repeated."""
    out: list[Statement] = []
    for s in inner:
        if isinstance(s, Instruction):
            out.append(Instruction(s.opcode, list(s.operands), s.pred, s.pred_neg, s.line, s.origin))
        elif not isinstance(s, Label) and not (isinstance(s, Directive) and s.keyword == ".pragma"):
            out.append(s)
    return out


def _fresh_labels(fn: Function, count: int) -> list[str]:
    taken = {s.name for s in fn.body or [] if isinstance(s, Label)}
    out, k = [], 0
    while len(out) < count:
        name = f"{EXIT_PREFIX}{k}"
        if name not in taken:
            out.append(name)
        k += 1
    return out


def _unroll_function(fn: Function, factor: int) -> tuple[list[Statement] | None, list[str]]:
    body = fn.body or []
    loops, refused = single_block_loops(fn)
    if not loops:
        return None, refused
    added = sum((factor - 1) * (loop.size(body) + 1) for loop in loops)
    if added > MAX_ADDED_INSTRUCTIONS:
        cap = f"more than {MAX_ADDED_INSTRUCTIONS}"
        return None, [f"{fn.name}: unrolling x{factor} would add {added} instructions ({cap})"]
    out: list[Statement] = []
    done = 0
    for loop, exit_label in zip(loops, _fresh_labels(fn, len(loops)), strict=True):
        back = body[loop.branch]
        exit_test = Instruction(back.opcode, [Sym(exit_label)], back.pred, not back.pred_neg, back.line,
                                origin=f"unroll_{factor}")
        out.extend(body[done:loop.branch])
        for _ in range(factor - 1):
            out.append(exit_test)
            out.extend(_copy(loop.inner(body)))
        out.extend([back, Label(exit_label)])
        done = loop.branch + 1
    out.extend(body[done:])
    return out, refused


def unroll(module: Module, factor: int, *, verify: bool = True) -> Module:
    """Unroll every qualifying single-block loop of every entry `factor` times (2 or 4). With verify, ptxas
    must accept the result for the module's architecture (a `.maxnreg` that the longer body cannot meet is
    refused); verify=False leaves that to whoever compiles the result, as for set_maxnreg."""
    if factor not in FACTORS:
        raise ValueError(f"unroll factor {factor}; one of {', '.join(map(str, FACTORS))}")
    changed = 0
    reasons: list[str] = []

    def rewrite(fn: Function) -> list[Statement] | None:
        nonlocal changed
        new, why = _unroll_function(fn, factor)
        changed += new is not None
        reasons.extend(why)
        return new

    result = rewrite_bodies(module, rewrite)
    if not changed:
        detail = "; ".join(reasons[:3]) if reasons else "the kernel has no loop"
        raise NotApplicable(f"no single-block loop to unroll x{factor}: {detail}")
    if verify:
        reason = ptxas_verdict(emit(result), module.arch)
        if reason is not None:
            raise NotApplicable(f"ptxas refuses the x{factor} unrolled kernel for {module.arch}: {reason}")
    return result
