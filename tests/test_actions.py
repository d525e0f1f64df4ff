"""The action space: names, order, conflict groups, mask and history."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chronos.actions import (
    ACTION_INDEX,
    ACTION_NAMES,
    CONFLICT_GROUPS,
    NUM_ACTIONS,
    SEED,
    SPACES,
    STOP,
    V2,
    conflicts,
    get_action_history,
    get_action_mask,
    resolve_space,
)
from chronos.errors import ChronosError, UnknownActionError

SEED_ORDER = [
    "vec_ld", "vec_st", "split_ld", "cache_cs", "cache_cg", "cache_ca", "cache_cv",
    "st_cache_cs", "st_cache_wt", "st_cache_wb", "maxnreg_32", "maxnreg_64", "maxnreg_128", "maxnreg_255",
    "reorder_cp", "reorder_il", "reorder_lf", "reorder_sl", "prefetch_L1", "prefetch_L2", "stop",
]
TRANSFORMS = [a for a in ACTION_NAMES if a != "stop"]


def test_names_and_order_are_the_seeds():
    assert list(ACTION_NAMES) == SEED_ORDER
    assert NUM_ACTIONS == 21 and STOP == 20 and ACTION_NAMES[STOP] == "stop"
    assert all(ACTION_NAMES[i] == a for a, i in ACTION_INDEX.items())


def test_conflict_groups():
    assert set(CONFLICT_GROUPS) == {"load_cache_hint", "store_cache_hint", "register_budget", "reorder",
                                    "prefetch"}
    assert CONFLICT_GROUPS["load_cache_hint"] == ("cache_cs", "cache_cg", "cache_ca", "cache_cv")
    assert CONFLICT_GROUPS["store_cache_hint"] == ("st_cache_cs", "st_cache_wt", "st_cache_wb")
    assert CONFLICT_GROUPS["prefetch"] == ("prefetch_L1", "prefetch_L2")
    grouped = [a for g in CONFLICT_GROUPS.values() for a in g]
    assert len(grouped) == len(set(grouped))  # each action in at most one group
    assert set(ACTION_NAMES) - set(grouped) == {"vec_ld", "vec_st", "split_ld", "stop"}


def test_conflicts():
    assert conflicts("cache_cg", {"cache_cs"})
    assert not conflicts("cache_cs", {"cache_cs"})  # same action: "applied", not "conflicting"
    assert not conflicts("cache_cg", {"st_cache_cs", "vec_ld"})
    assert conflicts("maxnreg_32", ["maxnreg_255"])
    for a in ("vec_ld", "vec_st", "split_ld", "stop"):
        assert not conflicts(a, TRANSFORMS)


def test_empty_mask_allows_everything():
    assert get_action_mask(set()) == [1] * 21
    assert get_action_mask(()) == [1] * 21
    assert get_action_history(set()) == [0] * 21


def test_mask_after_group_member():
    mask = get_action_mask({"cache_cs", "vec_ld"})
    for a in CONFLICT_GROUPS["load_cache_hint"]:
        assert mask[ACTION_INDEX[a]] == 0
    assert mask[ACTION_INDEX["vec_ld"]] == 0
    assert mask[ACTION_INDEX["vec_st"]] == 1 and mask[ACTION_INDEX["st_cache_cs"]] == 1
    assert mask[STOP] == 1


def test_legal_restricts_mask():
    mask = get_action_mask(["vec_st"], legal=["vec_ld", "vec_st", "maxnreg_64"])
    allowed = {ACTION_NAMES[i] for i, m in enumerate(mask) if m}
    assert allowed == {"vec_ld", "maxnreg_64", "stop"}
    assert get_action_mask((), legal=[]) == [0] * 20 + [1]


@given(st.lists(st.sampled_from(TRANSFORMS), max_size=8),
       st.one_of(st.none(), st.sets(st.sampled_from(ACTION_NAMES))))
def test_mask_and_history_invariants(applied, legal):
    mask = get_action_mask(applied, legal)
    hist = get_action_history(applied)
    assert len(mask) == len(hist) == 21 and set(mask) <= {0, 1} and set(hist) <= {0, 1}
    assert mask[STOP] == 1 and hist[STOP] == 0
    for i, a in enumerate(ACTION_NAMES[:-1]):
        assert hist[i] == (a in applied)
        expected = a not in applied and not conflicts(a, applied) and (legal is None or a in legal)
        assert mask[i] == int(expected)
        if hist[i]:
            assert mask[i] == 0


def test_sequence_types_agree():
    seq = ["vec_ld", "maxnreg_128", "prefetch_L2"]
    for applied in (seq, tuple(seq), set(seq), frozenset(seq)):
        assert get_action_mask(applied) == get_action_mask(seq)
        assert get_action_history(applied) == get_action_history(seq)


def test_at_most_one_per_group_reachable():
    """Greedily applying whatever the mask allows never puts two members of a group in `applied`."""
    for order in itertools.islice(itertools.permutations(TRANSFORMS), 50):
        applied = []
        for a in order:
            if get_action_mask(applied)[ACTION_INDEX[a]]:
                applied.append(a)
        for group in CONFLICT_GROUPS.values():
            assert sum(a in applied for a in group) <= 1


@pytest.mark.parametrize("call", [
    lambda: get_action_mask({"vec_ld", "cache_xx"}),
    lambda: get_action_history(["nope"]),
    lambda: conflicts("maxnreg_7", ()),
    lambda: get_action_mask((), legal=["bogus"]),
])
def test_unknown_action_raises(call):
    with pytest.raises(UnknownActionError) as e:
        call()
    assert isinstance(e.value, ChronosError)
    assert "unknown action" in str(e.value)


def test_bare_string_is_one_action():
    assert get_action_history("vec_ld") == get_action_history({"vec_ld"})


# ------------------------------------------------------------------ action space v2 (issue #14)
def test_seed_space_is_todays_names_order_and_groups():
    assert SEED.names == ACTION_NAMES and SEED.groups == CONFLICT_GROUPS and SEED.size == 21
    assert resolve_space("seed") is SEED and resolve_space(V2) is V2 and set(SPACES) == {"seed", "v2"}
    with pytest.raises(UnknownActionError, match="action space 'v3'"):
        resolve_space("v3")


def test_v2_is_a_superset_with_the_seeds_indices():
    assert V2.names[:21] == ACTION_NAMES  # every seed logit, stop included, keeps its index
    assert V2.index["stop"] == STOP == 20 and V2.size == 47 and len(set(V2.names)) == 47
    assert V2.names[21:] == (
        "l1_evict_first_reread", "l1_evict_last_reread", "l1_no_allocate_reread",
        "l1_evict_first_streaming", "l1_evict_last_streaming", "l1_no_allocate_streaming",
        "l2_evict_first_reread", "l2_evict_last_reread",
        "l2_evict_first_streaming", "l2_evict_last_streaming",
        "l2_prefetch_64B", "l2_prefetch_128B", "l2_prefetch_256B",
        "st_l1_evict_first", "st_l1_evict_last", "st_l1_no_allocate",
        "occ_ctas_1", "occ_ctas_2", "occ_ctas_3", "occ_ctas_4", "occ_ctas_6", "occ_ctas_8", "occ_ctas_16",
        "maxnreg_uncapped", "loop_unroll_2", "loop_unroll_4")


def test_v2_conflict_groups():
    for g, members in CONFLICT_GROUPS.items():  # the seed's groups, grown only by register_budget
        assert V2.groups[g][:len(members)] == members
        assert V2.groups[g] == members or g == "register_budget"
    assert V2.groups["register_budget"][4:] == (*(f"occ_ctas_{k}" for k in (1, 2, 3, 4, 6, 8, 16)),
                                                "maxnreg_uncapped")
    assert V2.groups["l1_eviction_reread"] == ("l1_evict_first_reread", "l1_evict_last_reread",
                                               "l1_no_allocate_reread")
    assert V2.groups["l2_policy_streaming"] == ("l2_evict_first_streaming", "l2_evict_last_streaming")
    assert V2.groups["l2_prefetch_size"] == ("l2_prefetch_64B", "l2_prefetch_128B", "l2_prefetch_256B")
    assert V2.groups["store_eviction"] == ("st_l1_evict_first", "st_l1_evict_last", "st_l1_no_allocate")
    grouped = [a for g in V2.groups.values() for a in g]
    assert len(grouped) == len(set(grouped))
    assert set(V2.names) - set(grouped) == {"vec_ld", "vec_st", "split_ld", "stop"}
    assert V2.groups["loop_unroll"] == ("loop_unroll_2", "loop_unroll_4")
    assert conflicts("occ_ctas_4", {"maxnreg_64"}, V2)
    assert conflicts("maxnreg_uncapped", {"occ_ctas_1"}, V2)
    assert not conflicts("l1_evict_first_reread", {"l1_evict_last_streaming", "cache_cs"}, V2)
    with pytest.raises(UnknownActionError):
        conflicts("occ_ctas_4", set())  # not a seed action


def test_masks_per_space():
    assert get_action_mask((), space=V2) == [1] * 47
    assert get_action_history(["occ_ctas_2"], V2) == [int(a == "occ_ctas_2") for a in V2.names]
    mask = dict(zip(V2.names, get_action_mask({"maxnreg_32", "l2_prefetch_64B"}, space=V2), strict=True))
    assert not any(mask[a] for a in V2.groups["register_budget"] + V2.groups["l2_prefetch_size"])
    assert all(mask[a] for a in V2.groups["l1_eviction_reread"] + V2.groups["store_eviction"])
    seed_part = get_action_mask({"maxnreg_32", "cache_cs"}, space=V2)[:21]
    assert seed_part == get_action_mask({"maxnreg_32", "cache_cs"})  # seed actions: the seed's mask


def test_v2_canonical_order_keeps_the_seeds_on_seed_actions():
    assert tuple(a for a in V2.canonical_order if a in SEED.index) == SEED.canonical_order
    assert V2.slots()[-1] == V2.groups["register_budget"]
