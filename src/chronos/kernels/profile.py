"""A workload's profile (capture's profile.json: per phase the GPU time of each Triton kernel) as an order."""

from __future__ import annotations


def by_gpu_time(specs: list, profile: dict) -> list:
    """`specs` with the entries that took the most GPU time in the profile first (all phases together);
    a kernel the profile does not name keeps its place after them (a stable sort)."""
    us: dict[str, float] = {}
    for phase in (profile.get("phases") or {}).values():
        for name, t in (phase.get("triton_kernels_us") or {}).items():
            us[name] = us.get(name, 0.0) + t
    return sorted(specs, key=lambda s: -us.get(s.entry, 0.0))
