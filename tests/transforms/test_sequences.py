"""Seeded random legal sequences of up to 6 actions produce PTX that ptxas accepts."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronos.ptx import emit, parse
from chronos.toolchain import assemble
from chronos.transforms import apply, legal_actions

from ..ptx.corpus import sample, target_arch

SAMPLE = sample()


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_legal_sequences_assemble(ptxas, data):
    name, text = data.draw(st.sampled_from(SAMPLE))
    module = parse(text, file=name)
    for _ in range(data.draw(st.integers(1, 6))):
        legal = legal_actions(module)
        if not legal:
            break
        module = apply(module, data.draw(st.sampled_from(legal)))
    assemble(emit(module), target_arch(text))
