"""Turn a compiled suite case into a KernelSpec whose args mirror the PTX entry's parameters one to one.

Triton drops constexprs and ints equal to 1 (it specialises them into constants) from the entry, keeps the
rest in Python order, and appends two hidden pointers (global and profile scratch). The JIT's view of that is
its signature (name -> type, "constexpr" for dropped ones) and attrs ({(index,): [["tt.divisibility", 16]]}).
`jit_specialisation` reproduces what the JIT decides for a case, so the same mapping works offline (CPU dry
run) and on the GPU (where the JIT's own `compiled.src` is used and compared).
"""

from __future__ import annotations

import re

from chronos.errors import SpecError
from chronos.kernels.spec import DTYPES, ArgSpec, KernelSpec
from chronos.kernels.triton_suite.cases import Buf, Case, Scalar

TRITON_TYPES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "i64": "i64", "i32": "i32"}
ARCH = "sm_90a"


def bind(case: Case, arg_names: list[str]) -> dict[str, Buf | Scalar]:
    """Kernel parameter name -> case arg: the case lists the non-constexpr parameters in order."""
    runtime = [n for n in arg_names if n not in case.const]
    if len(runtime) != len(case.args):
        raise SpecError(f"{case.name}: kernel takes {runtime}, case gives {[a.name for a in case.args]}")
    return dict(zip(runtime, case.args, strict=True))


def jit_specialisation(case: Case, arg_names: list[str]) -> tuple[dict[str, str], set[str]]:
    """(signature, names specialised as 16-divisible) as Triton 3.6's JIT derives them for this launch.

    Pointers count as 16-byte aligned when the buffer starts at an allocation (torch allocations are
    256-byte aligned) or its offset is a multiple of 16 bytes; ints when divisible by 16."""
    by_name = bind(case, arg_names)
    sig: dict[str, str] = {}
    div16: set[str] = set()
    for name in arg_names:
        a = by_name.get(name)
        if a is None:
            if name not in case.const:
                raise SpecError(f"{case.name}: kernel argument {name!r} is neither an arg nor a constexpr")
            sig[name] = "constexpr"
        elif isinstance(a, Buf):
            sig[name] = "*" + TRITON_TYPES[a.dtype]
            if a.offset * DTYPES[a.dtype] % 16 == 0:
                div16.add(name)
        elif a.dtype == "f32":
            sig[name] = "fp32"
        elif a.value == 1:
            sig[name] = "constexpr"
        else:
            sig[name] = "i32"
            if a.value % 16 == 0:
                div16.add(name)
    return sig, div16


def _check_type(case: Case, a: Buf | Scalar, ptype: str, is_ptr: bool) -> None:
    want_ptr = isinstance(a, Buf)
    ok = (is_ptr and ptype == ".u64") if want_ptr else (
        ptype == ".f32" if a.dtype == "f32" else ptype in (".u32", ".s32", ".b32"))
    if not ok or (is_ptr != want_ptr):
        raise SpecError(f"{case.name}: PTX param type {ptype}{' ptr' if is_ptr else ''} "
                        f"does not fit arg {a.name}")


def make_spec(case: Case, ptx: str, signature: dict[str, str], div16: set[str], shared: int,
              family: str = "triton") -> KernelSpec:
    # `signature` is ordered like the kernel's parameters (the JIT's and ASTSource's both are).
    """The KernelSpec of `case` compiled to `ptx` under the given JIT signature/divisibility; `family` names
    the tier's folder under data/kernels ("triton", "triton_llm", "probes")."""
    from chronos.ptx import parse

    entry = parse(ptx, file=f"{case.name}.ptx").entry()
    kept = [n for n, t in signature.items() if t != "constexpr"]
    params = entry.params
    if len(params) != len(kept) + 2:
        raise SpecError(f"{case.name}: PTX entry has {len(params)} params, "
                        f"expected {len(kept)} args + 2 hidden")
    by_name = bind(case, list(signature))
    args, align, names = [], {}, []
    for p, name in zip(params, kept, strict=False):
        a = by_name[name]
        _check_type(case, a, p.dtype, p.is_ptr)
        names.append(a.name)
        if isinstance(a, Buf):
            args.append(ArgSpec(p.name, "buffer", a.dtype, a.elements, a.role,
                                a.init if a.role == "input" else "poison"))
            if name in div16:
                align[p.name] = 16
        else:
            args.append(ArgSpec(p.name, "scalar", a.dtype, value=a.value))
    for p in params[len(kept):]:
        if not p.is_ptr:
            raise SpecError(f"{case.name}: hidden trailing param {p.name} is not a pointer")
        args.append(ArgSpec(p.name, "null", "u64", role="null"))
    m = re.search(r"\.reqntid\s+(\d+)", ptx)
    threads = int(m.group(1)) if m else 0
    if threads != case.num_warps * 32:
        raise SpecError(f"{case.name}: .reqntid {threads} != num_warps*32 = {case.num_warps * 32}")
    dropped = [by_name[n].name for n, t in signature.items() if t == "constexpr" and n in by_name]
    notes = (f"{case.desc}. Params: {', '.join(names)} + global/profile scratch (null)."
             + (f" Specialised away (== 1): {', '.join(dropped)}." if dropped else "")
             + (f" Tags: {', '.join(case.tags)}." if case.tags else ""))
    spec = KernelSpec(kernel=case.name, family=family, entry=entry.name, ptx=f"{case.name}.ptx",
                      grid=tuple(case.grid), block=(threads, 1, 1), args=tuple(args),
                      shared_bytes=int(shared), alignment=align, arch=ARCH, notes=notes)
    return spec.validate()


def compile_offline(case: Case, arch: int = 90):
    """triton.compile for sm_`arch` without a GPU, specialised as the JIT would be (imports triton)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from chronos.kernels.triton_suite.cases import kernel_fn

    fn = kernel_fn(case.kernel)
    sig, div16 = jit_specialisation(case, list(fn.arg_names))
    by_name = bind(case, list(fn.arg_names))
    consts = {n: case.const[n] if n in case.const else by_name[n].value
              for n, t in sig.items() if t == "constexpr"}
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in div16}
    src = ASTSource(fn=fn, signature=sig, constexprs={(fn.arg_names.index(n),): v for n, v in consts.items()},
                    attrs=attrs)
    opts = {"num_warps": case.num_warps, "num_stages": case.num_stages}
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=opts), sig, div16
