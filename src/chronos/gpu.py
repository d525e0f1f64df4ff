"""The GPU limits the observation and the occupancy actions reason with, in one place, with their sources.

Per-SM limits of compute capability 9.0 (also 8.0; sm_89 differs in threads and CTAs per SM, which no
feature here depends on more than the policy already does through its training kernels):
CUDA C++ Programming Guide, "Compute Capabilities", Table "Technical Specifications per Compute
Capability" — 64K 32-bit registers per SM, at most 255 per thread, 2048 resident threads and 32 resident
CTAs per SM, 228 KB of shared memory per SM of which a CTA may use at most 227 KB; and "Shared Memory"
(compute capability 8.x/9.0): 1 KB of shared memory per CTA is reserved for the system. Registers are
allocated per warp in units of 256 (CUDA Occupancy Calculator, "Register allocation unit size"), shared
memory in units of 128 bytes ("Shared Memory allocation unit size").

The SM count is the H200's (SXM: 132 SMs, the GH100 configuration of the H100 SXM5; NVIDIA H100 Tensor Core
GPU Architecture whitepaper, and `cudaDeviceProp.multiProcessorCount` on the project's H200 machines).
"""

from __future__ import annotations

SM_COUNT = 132
REGS_PER_SM = 65536
MAX_THREADS_PER_SM = 2048
MAX_CTAS_PER_SM = 32
MAX_REGS_PER_THREAD = 255
REG_GRANULE = 8  # per-thread registers: warps are given registers 256 (= 8 x 32 threads) at a time
SHARED_PER_SM = 228 * 1024
SHARED_PER_CTA_MAX = 227 * 1024
SHARED_RESERVED_PER_CTA = 1024
SHARED_GRANULE = 128
