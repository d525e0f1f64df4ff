"""Host-side data logic of a measurement (numpy only, CPU-testable): input draws, poison, bit-exact checks."""

from __future__ import annotations

import re

import numpy as np

from chronos.errors import SpecError
from chronos.kernels.spec import ArgSpec, KernelSpec

NP_DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "f64": np.float64, "i8": np.int8,
             "u8": np.uint8, "i16": np.int16, "i32": np.int32, "u32": np.uint32, "i64": np.int64,
             "u64": np.uint64}
_NUM = r"(-?[\d.e+-]+)"


def _to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits (round to nearest even), as uint16. In uint32 (4x faster than uint64); the
    sum cannot wrap below 0xFFFF8000, and the few inputs above (NaN payloads) take the 64-bit path."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    out = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    wrap = u >= np.uint32(0xFFFF8000)
    if wrap.any():
        w = u[wrap].astype(np.uint64)
        out[wrap] = ((w + 0x7FFF + ((w >> 16) & 1)) >> 16).astype(np.uint16)
    return out


def _cast(values: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bf16":
        return _to_bf16(values.astype(np.float32))
    return values.astype(NP_DTYPES[dtype])


LARGE = 1 << 24
"""Buffers with more elements than this (the LLM tier's) are drawn in float32, in parallel chunks."""
_CHUNK = 1 << 22


def _large(arg: ArgSpec, key: list[int], init: str) -> np.ndarray | None:
    """A large float buffer drawn in float32, chunk c from Generator(key + [c]), on a thread pool (numpy's
    generators release the GIL): seconds, not minutes, at 10^8 elements. None: not a float init."""
    from concurrent.futures import ThreadPoolExecutor

    m = re.fullmatch(rf"(uniform|normal)\({_NUM},{_NUM}\)", init)
    if m is None or arg.dtype not in ("f32", "f16", "bf16"):
        return None
    kind, a, b = m.group(1), float(m.group(2)), float(m.group(3))
    vals = np.empty(arg.elements, dtype=np.float32)
    out = np.empty(arg.elements, dtype=NP_DTYPES[arg.dtype])

    def fill(c: int) -> None:
        part = vals[c * _CHUNK:(c + 1) * _CHUNK]
        g = np.random.default_rng([*key, c])
        if kind == "normal":
            g.standard_normal(out=part, dtype=np.float32)
            part *= np.float32(b)
            part += np.float32(a)
        else:
            g.random(out=part, dtype=np.float32)
            part *= np.float32(b - a)
            part += np.float32(a)
        dst = out[c * _CHUNK:(c + 1) * _CHUNK]
        dst[:] = _to_bf16(part) if arg.dtype == "bf16" else part.astype(dst.dtype)

    with ThreadPoolExecutor() as ex:
        list(ex.map(fill, range(-(-arg.elements // _CHUNK))))
    return out


def init_buffer(arg: ArgSpec, rng: np.random.Generator, poison_byte: int = 0xFF,
                key: list[int] | None = None) -> np.ndarray:
    """A host array for one buffer argument drawn from its init string (`key`: the generator's seed, which
    large buffers derive their chunks' generators from)."""
    n, init = arg.elements, arg.init
    if n > LARGE and key is not None and (big := _large(arg, key, init)) is not None:
        return big
    if m := re.fullmatch(rf"uniform\({_NUM},{_NUM}\)", init):
        vals = rng.uniform(float(m.group(1)), float(m.group(2)), n)
    elif m := re.fullmatch(rf"normal\({_NUM},{_NUM}\)", init):
        vals = rng.normal(float(m.group(1)), float(m.group(2)), n)
    elif m := re.fullmatch(r"randint\((-?\d+),(-?\d+)\)", init):
        vals = rng.integers(int(m.group(1)), int(m.group(2)), n, endpoint=False)
    elif init == "zeros":
        vals = np.zeros(n)
    elif init == "arange":
        vals = np.arange(n)
    elif init == "poison":
        return poison(arg, poison_byte)
    else:
        raise SpecError(f"unknown init {init!r} for {arg.name}")
    return _cast(vals, arg.dtype)


def draw_inputs(spec: KernelSpec, seed: int, draw: int, poison_byte: int = 0xFF) -> dict[str, np.ndarray]:
    """Inputs (and inout buffers) for one draw: argument i of draw d uses Generator((seed, d, i)); draw 0
    of an argument with captured `data` is that data (when its file is present)."""
    out = {}
    for i, a in enumerate(spec.args):
        if a.kind == "buffer" and a.role in ("input", "inout"):
            captured = captured_data(spec, a) if draw == 0 else None
            out[a.name] = captured if captured is not None else init_buffer(
                a, np.random.default_rng([seed, draw, i]), poison_byte, [seed, draw, i])
    return out


def captured_data(spec: KernelSpec, arg: ArgSpec) -> np.ndarray | None:
    """The captured contents of `arg`, None when it has none or its file is absent (a clone without the
    git-ignored inputs: the init draw stands in). A file that does not fit the argument is an error."""
    if not arg.data:
        return None
    try:
        data = np.load(arg.data, allow_pickle=False)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise SpecError(f"{spec.kernel}: captured input {arg.name} ({arg.data}) is unreadable: {e}") from e
    want = np.dtype(NP_DTYPES[arg.dtype])
    if data.size != arg.elements or data.dtype.itemsize != want.itemsize:
        raise SpecError(f"{spec.kernel}: captured input {arg.name} ({arg.data}) holds {data.size} x "
                        f"{data.dtype} where the spec wants {arg.elements} x {arg.dtype}")
    return np.ascontiguousarray(data.reshape(-1)).view(want)


def poison(arg: ArgSpec, poison_byte: int = 0xFF) -> np.ndarray:
    return np.full(arg.nbytes, poison_byte, dtype=np.uint8).view(NP_DTYPES[arg.dtype])


def unwritten(arg: ArgSpec, data: np.ndarray, poison_byte: int = 0xFF) -> int:
    """How many elements of an output still hold the poison pattern (every byte == poison_byte)."""
    b = np.ascontiguousarray(data).view(np.uint8).reshape(arg.elements, -1)
    return int(np.count_nonzero(np.all(b == poison_byte, axis=1)))


def unwritten_error(spec, outputs: dict[str, np.ndarray], poison_byte: int = 0xFF) -> str | None:
    """Why a baseline's outputs cannot serve as the reference, or None. An output element still holding
    the poison pattern was not written: for Chronos's own kernels a wrong spec, always refused. A captured
    kernel (family "captured") may write only part of its output's memory span, a strided or padded view
    of a larger tensor (on the H200: Inductor's layer-norm and padding kernels, 9 of 230): its holes stay
    poison in every run, so comparing the whole buffer bit for bit still decides; only an output it leaves
    entirely unwritten is refused."""
    partial_ok = spec.family == "captured"
    holes = {a.name: n for a in spec.outputs if a.role == "output"
             and (n := unwritten(a, outputs[a.name], poison_byte)) and (n == a.elements or not partial_ok)}
    return f"baseline left poison in outputs (elements): {holes}" if holes else None


def bit_mismatches(ref: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> dict[str, int]:
    """{output name: number of elements whose bytes differ}; empty when every output is bit-identical.

    NaN == NaN here, -0.0 != +0.0: the comparison is on bytes, not values.
    """
    bad = {}
    for name, r in ref.items():
        g = got.get(name)
        if g is None or g.nbytes != r.nbytes:
            bad[name] = -1
            continue
        rb, gb = np.ascontiguousarray(r).tobytes(), np.ascontiguousarray(g).tobytes()
        if rb == gb:  # the common case, at memcmp speed: the element count below costs ~40x more
            continue
        rows = (np.frombuffer(rb, np.uint8).reshape(r.size, -1),
                np.frombuffer(gb, np.uint8).reshape(g.size, -1))
        bad[name] = int(np.count_nonzero(np.any(rows[0] != rows[1], axis=1)))
    return bad


def scalar_value(arg: ArgSpec):
    """A numpy scalar of the argument's dtype (f16/bf16 scalars pass their bits)."""
    if arg.dtype == "bf16":
        return _to_bf16(np.array([arg.value]))[0]
    return NP_DTYPES[arg.dtype](arg.value)


def stats(values) -> dict:
    """{"median", "iqr", "n"} of a sample."""
    v = np.asarray(values, dtype=np.float64)
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    return {"median": float(med), "iqr": float(q3 - q1), "n": int(v.size)}
