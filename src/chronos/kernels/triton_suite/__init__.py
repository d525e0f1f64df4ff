"""The Triton evaluation suite: 33 kernels written in this project (see cases.CASES and
data/kernels/triton/README.md). Importing this package needs neither triton nor torch."""

from chronos.kernels.triton_suite.cases import BY_NAME, CASES, Buf, Case, Scalar, kernel_fn

__all__ = ["BY_NAME", "CASES", "Buf", "Case", "Scalar", "kernel_fn"]
