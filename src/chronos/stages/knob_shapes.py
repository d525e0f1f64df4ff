"""Stage `knob_shapes` (#28): the one variant that deploys for the shapes of one stock PTX whose winners
differ, judged again at each shape beside stock and the shape's own winner (chronos.tuning.shape_confirm);
stage knob_census's section of that name.

    python -m chronos.stages.knob_shapes --params params.yaml --kernels data/kernels \
        --joint-parts data/knob_ptx --blocks-parts data/knob_blocks --walk-parts data/knob_walk \
        --parts data/knob_shapes --out reports/knob_shapes.json [--backend gpu|replay]
"""

from __future__ import annotations

import sys

from chronos.stages import knob_sections


def main(argv: list[str] | None = None) -> int:
    return knob_sections.main("knob_shapes", __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
