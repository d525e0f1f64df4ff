"""Kernel generators and launch specs (gemm_tile now; the Triton suite later)."""
