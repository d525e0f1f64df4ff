"""Floating-point global atomics in PTX text: a kernel that has any adds in whatever order its threads
arrive, so its output differs run to run and no variant of it can be verified bit-exactly."""

from __future__ import annotations

import re

_FLOAT_ATOMIC = re.compile(r"(?<![\w.])((?:atom|red)\.global[\w.:]*\.(?:f16|bf16|f32|f64)(?:x2)?)\b")


def float_atomics(ptx: str) -> list[str]:
    """The floating-point global atomics in `ptx` (distinct opcodes): a kernel with any is not deterministic
    run to run (in the captured corpus: the scatter-add backward of Inductor's embedding kernels)."""
    return sorted(set(_FLOAT_ATOMIC.findall(ptx)))
