"""Launch records into KernelSpec arguments (chronos capture's assembly): which recorded argument feeds
which PTX parameter, with what role, alignment contract and verification draws."""

from __future__ import annotations

import math
from dataclasses import replace

from chronos.errors import ChronosError
from chronos.kernels.spec import DTYPES, ArgSpec
from chronos.ptx import Module


class CaptureError(ChronosError):
    """A recorded launch that cannot become a KernelSpec."""


_SCALARS = {
    "u32": "i32",
    "s32": "i32",
    "b32": "i32",
    "u64": "i64",
    "s64": "i64",
    "b64": "i64",
    "f32": "f32",
    "f64": "f64",
    "u8": "u8",
    "s8": "i8",
    "b8": "u8",
    "u16": "i16",
    "s16": "i16",
    "b16": "i16",
}


def ptx_params(module: Module, entry: str) -> list[tuple[str, str, bool]]:
    """(name, PTX type, is pointer) of the entry's parameters, in order."""
    for fn in module.entries():
        if fn.name == entry:
            return [(p.name, p.dtype.lstrip("."), p.is_ptr) for p in fn.params]
    raise CaptureError(f"entry {entry} not found in its PTX")


def _mappable(args: list[dict], constants: dict, drop_ones: bool) -> list[dict]:
    kept = []
    for a in args:
        if a["kind"] == "none" or a["name"] in constants:
            continue
        if drop_ones and a["kind"] == "scalar" and a.get("pytype") == "int" and a["value"] == 1:
            continue  # Triton specialises integers equal to 1 into constants
        kept.append(a)
    return kept


def map_args(record: dict, params: list[tuple[str, str, bool]]) -> tuple[list[ArgSpec], dict[str, int]]:
    """The recorded launch arguments as ArgSpecs on the PTX parameters, and the alignment contract (16 bytes
    where the captured pointer had it: Triton specialised on it). The trailing pointer parameters nobody
    passes (Triton's global and profile scratch) become null arguments."""
    fits = None
    for drop_ones in (False, True):
        kept = _mappable(record["args"], record.get("constants", {}), drop_ones)
        if (
            len(kept) <= len(params)
            and all((a["kind"] == "tensor") == p[2] for a, p in zip(kept, params))
            and all(p[2] for p in params[len(kept) :])
        ):
            fits = kept
            break
    if fits is None:
        kinds = ["T" if a["kind"] == "tensor" else "S" for a in _mappable(record["args"], {}, False)]
        raise CaptureError(
            f"cannot map launch arguments {''.join(kinds)} onto PTX parameters "
            f"{''.join('P' if p[2] else 'S' for p in params)} (T/P tensor/pointer, S scalar)"
        )
    out = [_arg_spec(a, p) for a, p in zip(fits, params)]
    out += [ArgSpec(name=p[0], kind="null", dtype="u64", role="null") for p in params[len(fits) :]]
    alignment = {p[0]: 16 for a, p in zip(fits, params) if a["kind"] == "tensor" and a.get("align16")}
    return _with_aliases(out, fits, alignment), alignment


def _with_aliases(out: list[ArgSpec], fits: list[dict], alignment: dict[str, int]) -> list[ArgSpec]:
    """Tensors that alias another become `alias` arguments into its buffer, which takes both roles (read
    and written through either pointer: inout). The runner allocates buffers 256-byte aligned, so an alias
    keeps the 16-byte alignment Triton specialised it on only at an offset that is a multiple of 16."""
    held = aliases(fits)
    if not held:
        return out
    param = {a["name"]: spec.name for a, spec in zip(fits, out)}
    by_param = {spec.name: i for i, spec in enumerate(out)}
    for name, (holder, offset) in held.items():
        i, h = by_param[param[name]], by_param[param[holder]]
        if alignment.get(out[i].name) and offset % 16:
            raise CaptureError(f"argument {name} is 16-byte aligned at offset {offset} into {holder}, "
                               "which a 256-byte aligned allocation cannot reproduce")
        out[i] = replace(out[i], kind="alias", alias_of=out[h].name, offset=offset, role="input",
                         init="uniform(-1,1)", data=None)
        if out[h].role != "inout":
            fit = next(a for a in fits if a["name"] == holder)
            out[h] = replace(out[h], role="inout", init=_fresh_draw(fit), data=fit.get("data"))
    return out


def _arg_spec(a: dict, param: tuple[str, str, bool]) -> ArgSpec:
    name, ptx_type, _ = param
    if a["kind"] == "scalar":
        dtype = _SCALARS.get(ptx_type)
        if dtype is None or not isinstance(a["value"], (int, float)):
            raise CaptureError(f"scalar {a['name']}={a['value']!r} as PTX .{ptx_type} is not supported")
        return ArgSpec(name=name, kind="scalar", dtype=dtype, value=a["value"])
    if a.get("dtype") is not None and a["elements"] == 0:
        # an empty tensor (FlexAttention's block mask without full blocks): the kernel cannot read it, and
        # its pointer is passed as 0, as torch passes an empty tensor's
        return ArgSpec(name=name, kind="null", dtype="u64", role="null")
    if a.get("dtype") is None or a["elements"] <= 0:
        raise CaptureError(
            f"tensor {a['name']} ({a.get('torch_dtype')}, strides {a.get('strides')}) "
            "has no supported dtype or a negative/empty span"
        )
    role = "output" if a.get("write_only") else "inout" if a.get("mutated") else "input"
    init = "poison" if role == "output" else _fresh_draw(a)
    return ArgSpec(
        name=name,
        kind="buffer",
        dtype=a["dtype"],
        elements=a["elements"],
        role=role,
        init=init,
        data=None if role == "output" else a.get("data"),
    )


def _num(x: float) -> str:
    return repr(float(x)) if math.isfinite(x) else "0.0"


def _fresh_draw(a: dict) -> str:
    """The second verification draw: values like the captured ones (integers stay in their observed range,
    so indices and targets stay valid); zeros for an autotuner's reset_to_zero argument, as it launches."""
    if a.get("reset_to_zero"):
        return "zeros"
    if a["dtype"] in ("f32", "f16", "bf16", "f64"):
        if "mean" not in a:
            return "normal(0,1)"
        std = a.get("std") or 0.0
        if std > 0:
            return f"normal({_num(a['mean'])},{_num(std)})"
        return f"uniform({_num(a['mean'])},{_num(a['mean'])})"
    if "min" in a:
        return f"randint({int(a['min'])},{int(a['max']) + 1})"
    return "zeros"


def _tensor_spans(args: list[dict]) -> list[tuple[int, int, str]]:
    return sorted(
        ((a["ptr"], a["ptr"] + a["elements"] * DTYPES[a["dtype"]], a["name"]) for a in args
         if a["kind"] == "tensor" and a.get("elements", 0) > 0 and a.get("dtype")),
        key=lambda s: (s[0], -s[1]),
    )


def aliases(args: list[dict]) -> dict[str, tuple[str, int]]:
    """{argument: (the argument whose span holds it, byte offset)} for tensors that share memory with an
    earlier-starting (or equal but longer) one: attorch passes its input as the absent bias. Two spans that
    overlap without one holding the other cannot be one buffer plus a view of it: CaptureError."""
    out: dict[str, tuple[str, int]] = {}
    base = None
    for start, end, name in _tensor_spans(args):
        if base is not None and start < base[1]:
            if end > base[1]:
                raise CaptureError(f"arguments {base[2]} and {name} overlap in memory without one holding "
                                   "the other (a spec reproduces a buffer and views inside it)")
            out[name] = (base[2], start - base[0])
        else:
            base = (start, end, name)
    return out
