"""Shared test setup: GPU tests skip without a GPU; the `ptxas` fixture skips without ptxas, except in CI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def pytest_configure(config):
    """Under pytest-xdist (the README's `-n auto`) each worker is one process per core: torch's CPU ops keep
    to one thread there, as two workers each spinning a thread per core oversubscribe the machine (a
    training test took 69 s instead of 4 s on 2 busy cores)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    from chronos.toolchain import cuda_gpu_available

    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items or cuda_gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and pycuda (pip install '.[gpu]')")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def ptxas() -> Path:
    """The ptxas binary. Missing ptxas skips the test locally but fails it in CI, where the
    nvidia-cuda-nvcc wheel (a core dependency) must provide one."""
    from chronos.errors import ToolchainError
    from chronos.toolchain import find_ptxas

    try:
        return find_ptxas()
    except ToolchainError as e:
        if _in_ci():
            pytest.fail(f"CI must find ptxas (the nvidia-cuda-nvcc wheel): {e}")
        pytest.skip(str(e))
