"""The 25 scalar kernel features the policy sees (its observation is these + mask + history = 67).

Every feature is a deterministic function of the IR. Scaling, so that all values sit in a range an MLP
handles without normalisation statistics:

* raw counts (`n_*`, `regs_*`, `load_use_distance`) are `log1p(count)` — 0 for none, ~7 for a thousand;
* ratios and fractions (`*_ratio`, `*_fraction`, `*_coverage`) are in [0, 1], 0 when the denominator is 0;
* `maxnreg_budget` is `.maxnreg / 255` (0 when no budget is set); `has_*` are 0/1 flags.

A module with several `.entry` functions is aggregated over every entry with a body: counts are summed,
ratios are computed from the summed numerators and denominators, register declarations take the maximum
over entries (each kernel has its own register file), and `maxnreg_budget` takes the tightest budget set.
`.func` bodies are not counted (device functions called from an entry are usually inlined by the compiler
that produced the PTX). A module without any entry body raises ChronosError: there is no kernel to describe.

Each transform moves at least one feature: vec_ld/vec_st/split_ld the vector ratios and load/store counts,
cache hints the coverage features, maxnreg_* the budget, prefetch_* the prefetch count, and the reorders the
load-use distance (the only order-sensitive feature).
"""

from __future__ import annotations

import functools
import math
from collections import Counter

from chronos.errors import ChronosError
from chronos.ptx.ir import Function, Instruction, Label, Module, RegDecl, operand_regs

FEATURE_DOCS: dict[str, str] = {
    "n_instructions": "log1p of the number of instructions in the kernel body",
    "n_global_loads": "log1p of global loads (ld.global / ldu.global, any width)",
    "n_global_stores": "log1p of global stores (st.global)",
    "n_shared_mem_ops": "log1p of shared-memory loads and stores (ld/st.shared, ldmatrix, stmatrix)",
    "n_fma": "log1p of floating FMAs/MADs plus tensor-core ops (fma, float mad, mma, wgmma.mma_async)",
    "n_branches": "log1p of branches (bra, brx.idx)",
    "n_barriers": "log1p of CTA barriers (bar.*, barrier.*)",
    "n_basic_blocks": "log1p of basic blocks, counted as labels + 1 per entry",
    "n_prefetch": "log1p of prefetch instructions (prefetch, prefetchu)",
    "vec_load_ratio": "fraction of global loads that are vector accesses (.v2/.v4/.v8)",
    "vec_store_ratio": "fraction of global stores that are vector accesses (.v2/.v4/.v8)",
    "load_cache_hint_coverage": "fraction of global loads with a cache operator (.ca/.cg/.cs/.cv/.lu) "
                                "or an L1:: eviction priority",
    "store_cache_hint_coverage": "fraction of global stores with a cache operator (.wb/.cg/.cs/.wt) "
                                 "or an L1:: eviction priority",
    "regs_int32": "log1p of declared 32-bit integer/bit registers (.b32/.u32/.s32)",
    "regs_int64": "log1p of declared 64-bit integer/bit registers (.b64/.u64/.s64)",
    "regs_float": "log1p of declared floating registers (.f16/.f16x2/.bf16/.bf16x2/.f32/.f64)",
    "regs_pred": "log1p of declared predicate registers (.pred)",
    "maxnreg_budget": "the .maxnreg register budget divided by 255; 0 when none is set",
    "memory_fraction": "memory ops / (memory ops + arithmetic ops): 1 is all memory, 0 all compute",
    "fma_fraction": "n_fma's raw count divided by the instruction count",
    "sfu_fraction": "special-function ops (ex2, lg2, rcp, sqrt, rsqrt, sin, cos, tanh, float div) "
                    "divided by the instruction count",
    "cvt_fraction": "conversions (cvt, cvt.pack) divided by the instruction count",
    "load_use_distance": "log1p of the mean number of instructions between a global load and the first "
                         "later mention of its result in the same basic block (block end if none)",
    "has_async_copy": "1 when the kernel uses asynchronous copies (cp.async*), else 0",
    "has_tensor_core": "1 when the kernel uses tensor-core ops (mma, wgmma.mma_async), else 0",
}
"""Feature name -> one-line meaning (and scaling)."""

FEATURE_NAMES: tuple[str, ...] = tuple(FEATURE_DOCS)
"""The 25 feature names, in the order `extract_features` returns them."""

NUM_FEATURES = len(FEATURE_NAMES)
assert NUM_FEATURES == 25

_VEC_MODS = frozenset({"v2", "v4", "v8"})
_LD_COPS = frozenset({"ca", "cg", "cs", "cv", "lu"})
_ST_COPS = frozenset({"wb", "cg", "cs", "wt"})
_FLOAT_TYPES = frozenset({"f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "e4m3x2", "e5m2x2"})
_SFU_OPS = frozenset({"ex2", "lg2", "rcp", "sqrt", "rsqrt", "sin", "cos", "tanh"})
_MEM_OPS = frozenset({"ld", "ldu", "st", "atom", "red", "prefetch", "prefetchu", "ldmatrix", "stmatrix",
                      "cp", "tex", "tld4", "suld", "sust"})
# Arithmetic and logic: the "compute" side of memory_fraction (moves, control and sync are neither).
_ALU_OPS = frozenset({
    "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "fma", "div", "rem", "abs", "neg", "min", "max",
    "and", "or", "xor", "not", "cnot", "shl", "shr", "shf", "lop3", "bfe", "bfi", "bfind", "brev", "popc",
    "clz", "fns", "prmt", "dp4a", "dp2a", "setp", "set", "selp", "slct", "testp", "copysign", "cvt",
    "mma", "wgmma", "addc", "subc", "madc",
} | _SFU_OPS)
_REG_CLASSES = {
    "int32": frozenset({"b32", "u32", "s32"}),
    "int64": frozenset({"b64", "u64", "s64"}),
    "float": frozenset({"f16", "f16x2", "bf16", "bf16x2", "f32", "f64"}),
    "pred": frozenset({"pred"}),
}


def _in_space(mods: tuple[str, ...], space: str) -> bool:
    """True when the state space is `space` (`shared::cta` counts as `shared`)."""
    return any(m == space or m.startswith(space + "::") for m in mods)


def _global_access_tags(op: str, mods: tuple[str, ...]) -> set[str]:
    """Global loads and stores, and whether they are vector accesses or carry a cache hint."""
    tags = set()
    if op in ("ld", "ldu") and _in_space(mods, "global"):
        tags.add("gld")
        if any(m in _VEC_MODS for m in mods):
            tags.add("gld_vec")
        if any(m in _LD_COPS or m.startswith("L1::") for m in mods):
            tags.add("gld_hint")
    elif op == "st" and _in_space(mods, "global"):
        tags.add("gst")
        if any(m in _VEC_MODS for m in mods):
            tags.add("gst_vec")
        if any(m in _ST_COPS or m.startswith("L1::") for m in mods):
            tags.add("gst_hint")
    return tags


def _math_tags(op: str, mods: tuple[str, ...]) -> set[str]:
    """FMAs (tensor-core ops included), tensor-core ops, special functions and conversions."""
    tags = set()
    floaty = any(m in _FLOAT_TYPES for m in mods)
    tensor = op == "mma" or (op == "wgmma" and "mma_async" in mods)
    # Integer mad.lo/mad.wide is address arithmetic, not the kernel's math.
    if op == "fma" or tensor or (op == "mad" and floaty):
        tags.add("fma")
    if tensor:
        tags.add("tensor")
    if op in _SFU_OPS or (op == "div" and floaty):
        tags.add("sfu")
    if op == "cvt":
        tags.add("cvt")
    return tags


def _other_tags(op: str, mods: tuple[str, ...]) -> set[str]:
    """Shared-memory ops, control flow, barriers, prefetches, async copies and the memory/ALU split."""
    tags = set()
    if (op in ("ld", "st") and _in_space(mods, "shared")) or op in ("ldmatrix", "stmatrix"):
        tags.add("shared")
    if op in ("bra", "brx"):
        tags.add("branch")
    if op in ("bar", "barrier"):
        tags.add("barrier")
    if op in ("prefetch", "prefetchu"):
        tags.add("prefetch")
    if op in _MEM_OPS and not _in_space(mods, "param"):
        tags.add("mem")
    elif op in _ALU_OPS:
        tags.add("alu")
    if op == "cp" and "async" in mods:
        tags.add("async")
    return tags


@functools.lru_cache(maxsize=4096)
def _tags(opcode: str) -> frozenset[str]:
    """The counters an opcode contributes to. Depends on the opcode text only, so it is cached: a kernel
    has few distinct opcodes, and this keeps feature extraction well under a millisecond per 100 lines."""
    op, *rest = opcode.split(".")
    mods = tuple(rest)
    return frozenset(_global_access_tags(op, mods) | _math_tags(op, mods) | _other_tags(op, mods))


def _mentions(ins: Instruction) -> set[str]:
    regs = {r for o in ins.operands for r in operand_regs(o)}
    if ins.pred:
        regs.add(ins.pred.lstrip("!@"))
    return regs


class _PendingLoads:
    """The global loads of the current basic block whose results have not been mentioned yet."""

    def __init__(self) -> None:
        self.out: list[int] = []  # settled distances, in settling order
        self.pending: dict[str, int] = {}  # register -> position of the load that defined it
        self.loads: dict[int, set[str]] = {}  # load position -> its destination registers still pending

    def settle(self, load_pos: int, at: int) -> None:
        self.out.append(at - load_pos)
        for r in self.loads.pop(load_pos):
            self.pending.pop(r, None)

    def flush(self, pos: int) -> None:
        """The block ends at `pos`: settle every pending load there."""
        for p in sorted(self.loads):
            self.settle(p, pos)

    def visit(self, ins: Instruction, pos: int) -> None:
        """Settle the loads whose results `ins` (at `pos`) mentions; track `ins` if it is a global load."""
        if self.pending:
            for p in sorted({self.pending[r] for r in _mentions(ins) if r in self.pending}):
                self.settle(p, pos)
        if "gld" in _tags(ins.opcode) and ins.operands:
            dests = set(operand_regs(ins.operands[0]))
            if dests:
                self.loads[pos] = dests
                self.pending.update(dict.fromkeys(dests, pos))


def _load_use_distances(fn: Function) -> list[int]:
    """For each global load: instructions until its result is next mentioned, within its basic block.

    One forward pass: pending load results wait in a dict until an instruction mentions them; a label or
    a branch ends the block and settles every pending load at the block's end.
    """
    state = _PendingLoads()
    pos = 0
    for st in fn.body or []:
        if isinstance(st, Label):
            state.flush(pos)
            continue
        if not isinstance(st, Instruction):
            continue
        state.visit(st, pos)
        pos += 1
        if st.op in ("bra", "brx", "ret", "exit"):
            state.flush(pos)
    state.flush(pos)
    return state.out


def _entry_counts(fn: Function) -> Counter:
    body = fn.body or []
    opcodes = Counter(s.opcode for s in body if isinstance(s, Instruction))
    c: Counter = Counter({"instructions": sum(opcodes.values())})
    for opcode, n in opcodes.items():
        for tag in _tags(opcode):
            c[tag] += n
    c["blocks"] = 1 + sum(isinstance(s, Label) for s in body)
    return c


def _declared_regs(fn: Function) -> Counter:
    c: Counter = Counter()
    for st in fn.body or []:
        if not isinstance(st, RegDecl):
            continue
        dtype = st.dtype.lstrip(".")
        n = sum(1 if count is None else count for _, count in st.names)
        for cls, types in _REG_CLASSES.items():
            if dtype in types:
                c[cls] += n
    return c


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def extract_features(module: Module) -> list[float]:
    """The 25 features of `module`, in FEATURE_NAMES order (see the module docstring for aggregation)."""
    entries = module.entries()
    if not entries:
        where = f" in {module.source}" if module.source else ""
        raise ChronosError(f"no .entry with a body{where}: nothing to extract features from")
    c: Counter = Counter()
    regs: Counter = Counter()
    budgets: list[int] = []
    dists: list[int] = []
    for fn in entries:
        c.update(_entry_counts(fn))
        for cls, n in _declared_regs(fn).items():
            regs[cls] = max(regs[cls], n)
        if fn.maxnreg is not None:
            budgets.append(fn.maxnreg)
        dists.extend(_load_use_distances(fn))
    n = c["instructions"]
    lg = math.log1p
    values = {
        "n_instructions": lg(n),
        "n_global_loads": lg(c["gld"]),
        "n_global_stores": lg(c["gst"]),
        "n_shared_mem_ops": lg(c["shared"]),
        "n_fma": lg(c["fma"]),
        "n_branches": lg(c["branch"]),
        "n_barriers": lg(c["barrier"]),
        "n_basic_blocks": lg(c["blocks"]),
        "n_prefetch": lg(c["prefetch"]),
        "vec_load_ratio": _ratio(c["gld_vec"], c["gld"]),
        "vec_store_ratio": _ratio(c["gst_vec"], c["gst"]),
        "load_cache_hint_coverage": _ratio(c["gld_hint"], c["gld"]),
        "store_cache_hint_coverage": _ratio(c["gst_hint"], c["gst"]),
        "regs_int32": lg(regs["int32"]),
        "regs_int64": lg(regs["int64"]),
        "regs_float": lg(regs["float"]),
        "regs_pred": lg(regs["pred"]),
        "maxnreg_budget": min(min(budgets) / 255.0, 1.0) if budgets else 0.0,
        "memory_fraction": _ratio(c["mem"], c["mem"] + c["alu"]),
        "fma_fraction": _ratio(c["fma"], n),
        "sfu_fraction": _ratio(c["sfu"], n),
        "cvt_fraction": _ratio(c["cvt"], n),
        "load_use_distance": lg(_ratio(sum(dists), len(dists))),
        "has_async_copy": float(c["async"] > 0),
        "has_tensor_core": float(c["tensor"] > 0),
    }
    return [float(values[name]) for name in FEATURE_NAMES]


def extract_features_from_ptx(text: str, file: str | None = None) -> list[float]:
    """Parse PTX source and return its 25 features (PTXParseError on malformed input)."""
    from chronos.ptx import parse  # imported here so that the IR-only path does not need the parser

    return extract_features(parse(text, file=file))
