"""What `chronos capture` records of a launch's tensors: layout (dtype, shape, strides, the span of memory it
addresses) and value statistics a fresh draw keeps valid (integer ranges: indices, targets)."""

from __future__ import annotations

_STATS_SAMPLE = 1 << 22  # elements: value statistics of larger tensors come from an even-strided sample
_TORCH_TO_SPEC = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int8": "i8",
                  "uint8": "u8", "int16": "i16", "int32": "i32", "int64": "i64", "bool": "u8",
                  "uint32": "u32", "uint64": "u64"}


def is_tensor(a) -> bool:
    return hasattr(a, "data_ptr") and hasattr(a, "stride") and hasattr(a, "dtype")


def tensor_desc(t) -> dict:
    shape, strides = list(t.shape), list(t.stride())
    dtype = _TORCH_TO_SPEC.get(str(t.dtype).removeprefix("torch."))
    if any(s < 0 for s in strides):
        span = -1
    else:
        span = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    return {
        "kind": "tensor",
        "dtype": dtype,
        "torch_dtype": str(t.dtype),
        "shape": shape,
        "strides": strides,
        "elements": span,
        "align16": t.data_ptr() % 16 == 0,
        "ptr": t.data_ptr(),
        "device": str(t.device),
    }


def span_view(t, elements: int):
    import torch

    return torch.as_strided(t, (elements,), (1,))


def value_stats(t, d: dict) -> dict:
    """min/max (integers, bool) or mean/std over finite values (floats): what a fresh draw keeps valid.
    Integers over the tensor's own elements: a strided view's span may hold memory the view never
    addresses (torch.empty's garbage around gpt2's shifted labels), whose range would make a fresh draw
    of targets invalid (an Inductor bounds assert)."""
    import torch

    if d["elements"] <= 0:
        return {}
    own = not t.dtype.is_floating_point and t.numel() > 0
    flat = t.detach().reshape(-1) if own else span_view(t, d["elements"])
    if flat.numel() > _STATS_SAMPLE:
        flat = flat[:: -(-flat.numel() // _STATS_SAMPLE)]
    if t.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    if t.dtype.is_floating_point:
        x = flat.float()
        x = x[torch.isfinite(x)]
        if x.numel() == 0:
            return {"finite": 0}
        return {
            "finite": int(x.numel()),
            "mean": float(x.mean()),
            "std": float(x.std()) if x.numel() > 1 else 0.0,
            "min": float(x.min()),
            "max": float(x.max()),
        }
    return {"min": int(flat.min()), "max": int(flat.max())}


def changed(before, t) -> bool:
    import torch

    return not torch.equal(before.view(-1), span_view(t, before.numel()).detach().cpu().view(-1))
