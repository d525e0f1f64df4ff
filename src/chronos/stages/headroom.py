"""Stage `headroom` (#14): where real kernels have headroom. Greedy in wall time (chronos.search.timed) over
an action space (v2 by default) on the kernels of real workloads and the LLM-size suite: every step measures
the incumbent and every legal one-action extension side by side, bit-exact verified, so step 0 alone is a
census of what each single action does to each kernel.

    python -m chronos.stages.headroom --params params.yaml --kernels data/kernels --parts data/headroom \
        --out reports/headroom.json [--backend gpu|replay] [--budget S]

Reads `search.headroom` (families, space, per_family, budget_s, peak_gb_s, max_steps), `search.greedy` and
`timing`. With `--section census` it reads `search.census` instead and writes data/census and
reports/census.json: max_steps 1 there, i.e. step 0 alone (every legal single action beside the baseline,
in one comparison) on more kernels per family, the measured outcomes stage heldout scores its choices with.
Per family the `per_family` kernels with the most GPU time in the workload's profile come first (a family
without a profile: the specs' order). With the gpu backend each kernel's search is written to
`<parts>/<family>/<kernel>.json` as it ends (resumable; no kernel starts after the budget). With replay,
every kernel that has a part is searched again from the store and must choose as recorded; a kernel
without a part is `not_measured`. The report gives per kernel its roofline fraction (bytes of its buffers
over its time, against peak_gb_s: a bound, since a kernel may touch less than its buffers), the gain found
with its interval, and the action family (conflict group) that gave it; per family how often its best
single action beat the baseline.
"""

from __future__ import annotations

import sys

from chronos.stages import timed_sections


def main(argv: list[str] | None = None) -> int:
    return timed_sections.main("headroom", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
