"""Large-buffer draws (the LLM tier): float32 in parallel chunks, deterministic, same bf16 rounding."""

from __future__ import annotations

import numpy as np

from chronos.kernels.spec import ArgSpec
from chronos.measure import inputs


def _ref_bf16(x: np.ndarray) -> np.ndarray:
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def test_fast_bf16_rounding_equals_the_64_bit_rule_including_nan_payloads():
    x = np.random.default_rng(3).standard_normal(100_000).astype(np.float32)
    edge = np.array([0xFFFFFFFF, 0xFFFF8000, 0xFFFF7FFF, 0x7F7FFFFF, 0x7FC00001, 0x80000000], dtype=np.uint32)
    x = np.concatenate([x, edge.view(np.float32)])
    assert np.array_equal(inputs._to_bf16(x), _ref_bf16(x))


def test_large_draws_are_deterministic_in_range_and_chunked(monkeypatch):
    monkeypatch.setattr(inputs, "LARGE", 1000)
    monkeypatch.setattr(inputs, "_CHUNK", 4096)
    arg = ArgSpec(name="x", kind="buffer", dtype="f16", elements=50_000, role="input", init="uniform(-2,3)")
    a = inputs.init_buffer(arg, np.random.default_rng([0, 0, 0]), 255, [0, 0, 0])
    b = inputs.init_buffer(arg, np.random.default_rng([0, 0, 0]), 255, [0, 0, 0])
    c = inputs.init_buffer(arg, np.random.default_rng([0, 1, 0]), 255, [0, 1, 0])
    assert a.dtype == np.float16 and np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.min() >= -2 and a.max() <= 3 and abs(float(a.astype(np.float32).mean()) - 0.5) < 0.05


def test_small_buffers_keep_their_original_draws():
    arg = ArgSpec(name="x", kind="buffer", dtype="f32", elements=1000, role="input", init="normal(0,1)")
    want = np.random.default_rng([0, 0, 0]).normal(0.0, 1.0, 1000).astype(np.float32)
    assert np.array_equal(inputs.init_buffer(arg, np.random.default_rng([0, 0, 0]), 255, [0, 0, 0]), want)
