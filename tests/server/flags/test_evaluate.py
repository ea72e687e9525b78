"""One flag for one person: condition groups, rollout boundaries, variants, overrides, reasons, payloads."""

from __future__ import annotations

from collections import Counter

import pytest

from hoglab.server.flags import FlagSpec, Person, evaluate_flag
from hoglab.server.flags.evaluate import reason_description
from hoglab.server.flags.hashing import bucket, in_rollout, variant_for

VARIANTS = [
    {"key": "control", "rollout_percentage": 34},
    {"key": "test", "rollout_percentage": 33},
    {"key": "other", "rollout_percentage": 33},
]


def _flag(groups, variants=None, key="flag", **filters) -> FlagSpec:
    body = {"groups": groups, **filters}
    if variants is not None:
        body["multivariate"] = {"variants": variants}
    return FlagSpec(1, key, body)


def _prop(key, value, operator="exact"):
    return {"key": key, "value": value, "operator": operator, "type": "person"}


def test_experiment_flags_give_flag_hashing_variants():
    flag = _flag([{"properties": [], "rollout_percentage": 100}], VARIANTS, key="exp")
    ids = [f"user-{i}" for i in range(3000)]
    got = [evaluate_flag(flag, Person(i)) for i in ids]
    assert [m.variant for m in got] == [variant_for("exp", i, VARIANTS) for i in ids]
    assert all(m.enabled and m.reason == "condition_match" and m.condition_index == 0 for m in got)
    shares = Counter(m.variant for m in got)
    assert abs(shares["control"] / 3000 - 0.34) < 0.03 and abs(shares["test"] / 3000 - 0.33) < 0.03


@pytest.mark.parametrize("rollout", [0, 0.5, 33.3, 50, 99.9, 100])
def test_rollout_includes_exactly_the_buckets_at_or_below_the_bound(rollout):
    flag = _flag([{"properties": [], "rollout_percentage": rollout}], key="roll")
    ids = [f"d{i}" for i in range(2000)]
    enabled = [evaluate_flag(flag, Person(i)).enabled for i in ids]
    assert enabled == [in_rollout("roll", i, rollout) for i in ids]
    assert abs(sum(enabled) / len(ids) - rollout / 100) < 0.03
    for i, on in zip(ids, enabled, strict=True):
        assert on == (bucket("roll", i) <= rollout / 100)
    off = [evaluate_flag(flag, Person(i)) for i, on in zip(ids, enabled, strict=True) if not on]
    assert all(m.reason == "out_of_rollout_bound" and m.value is False for m in off)


def test_a_person_exactly_on_the_bound_is_in():
    # Find a person whose bucket survives the round trip through a percentage exactly, so the bound equals it.
    person = next(f"p{i}" for i in range(1000) if bucket("edge", f"p{i}") * 100 / 100 == bucket("edge", f"p{i}"))
    value = bucket("edge", person)
    on_bound = _flag([{"properties": [], "rollout_percentage": value * 100}], key="edge")
    assert evaluate_flag(on_bound, Person(person)).enabled
    below = _flag([{"properties": [], "rollout_percentage": value * 100 - 1e-9}], key="edge")
    assert not evaluate_flag(below, Person(person)).enabled


def test_no_rollout_means_everyone_who_matches():
    flag = _flag([{"properties": [_prop("plan", "pro")]}])
    assert evaluate_flag(flag, Person("a", {"plan": "pro"})).value is True
    miss = evaluate_flag(flag, Person("a", {"plan": "free"}))
    assert (miss.value, miss.reason, miss.condition_index) == (False, "no_condition_match", 0)


def test_first_matching_group_wins_and_reports_its_index():
    flag = _flag([
        {"properties": [_prop("plan", "pro")], "rollout_percentage": 100},
        {"properties": [_prop("country", "DE")], "rollout_percentage": 100},
        {"properties": [], "rollout_percentage": 0},
    ])  # fmt: skip
    assert evaluate_flag(flag, Person("a", {"plan": "pro", "country": "DE"})).condition_index == 0
    match = evaluate_flag(flag, Person("a", {"country": "DE"}))
    assert (match.enabled, match.condition_index, reason_description(match)) == (True, 1, "Matched condition set 2")
    # No group matched: the most informative reason wins (out of rollout beats no match), with its index.
    miss = evaluate_flag(flag, Person("a", {}))
    assert (miss.enabled, miss.reason, miss.condition_index) == (False, "out_of_rollout_bound", 2)


def test_all_properties_of_a_group_must_match():
    flag = _flag([{"properties": [_prop("plan", "pro"), _prop("age", 18, "gte")], "rollout_percentage": 100}])
    assert evaluate_flag(flag, Person("a", {"plan": "pro", "age": 20})).enabled
    assert not evaluate_flag(flag, Person("a", {"plan": "pro", "age": 17})).enabled


def test_variant_override_groups_are_tried_first():
    flag = _flag(
        [
            {"properties": [], "rollout_percentage": 100},
            {"properties": [_prop("email", "@example.com", "icontains")], "variant": "other"},
        ],
        VARIANTS,
    )
    forced = evaluate_flag(flag, Person("u1", {"email": "qa@example.com"}))
    assert (forced.variant, forced.condition_index) == ("other", 1)
    normal = evaluate_flag(flag, Person("u1", {"email": "me@gmail.com"}))
    assert (normal.variant, normal.condition_index) == (variant_for("flag", "u1", VARIANTS), 0)


def test_an_unknown_variant_override_falls_back_to_hashing():
    flag = _flag([{"properties": [], "rollout_percentage": 100, "variant": "gone"}], VARIANTS)
    assert evaluate_flag(flag, Person("u2")).variant == variant_for("flag", "u2", VARIANTS)


def test_variants_short_of_100_leave_some_persons_enabled_without_a_variant():
    short = [{"key": "a", "rollout_percentage": 10}]
    flag = _flag([{"properties": [], "rollout_percentage": 100}], short)
    values = {evaluate_flag(flag, Person(f"p{i}")).value for i in range(200)}
    assert values == {"a", True}


def test_payloads_follow_the_value():
    flag = _flag([{"properties": [], "rollout_percentage": 100}], payloads={"true": '{"x": 1}'})
    assert evaluate_flag(flag, Person("a")).payload == '{"x": 1}'
    multi = _flag([{"properties": [], "rollout_percentage": 100}], [{"key": "only", "rollout_percentage": 100}],
                  payloads={"only": {"layout": "wide"}})  # fmt: skip
    assert evaluate_flag(multi, Person("a")).payload == '{"layout":"wide"}'
    off = _flag([{"properties": [], "rollout_percentage": 0}], payloads={"true": "1"})
    assert evaluate_flag(off, Person("a")).payload is None


def test_experience_continuity_hashes_on_the_override():
    flag = FlagSpec(1, "sticky", {"groups": [{"rollout_percentage": 100}], "multivariate": {"variants": VARIANTS}},
                    ensure_experience_continuity=True)  # fmt: skip
    anon = evaluate_flag(flag, Person("anon-1"))
    identified = evaluate_flag(flag, Person("user@x.com", hash_keys={"sticky": "anon-1"}))
    assert identified.variant == anon.variant == variant_for("sticky", "anon-1", VARIANTS)
    plain = FlagSpec(1, "sticky", flag.filters)  # without continuity the override is ignored
    assert evaluate_flag(plain, Person("user@x.com", hash_keys={"sticky": "anon-1"})).variant == variant_for(
        "sticky", "user@x.com", VARIANTS
    )


def test_cohort_conditions():
    flag = _flag([{"properties": [{"key": "id", "type": "cohort", "value": 7}], "rollout_percentage": 100}])
    assert evaluate_flag(flag, Person("a", cohort_members=frozenset({7}))).enabled
    assert not evaluate_flag(flag, Person("a", cohort_members=frozenset({8}))).enabled
    negated = _flag([{"properties": [{"key": "id", "type": "cohort", "value": 7, "operator": "not_in"}]}])
    assert evaluate_flag(negated, Person("a")).enabled
    # A cohort of person properties is matched inline, as PostHog does, including its negations and nesting.
    inline = {
        7: {"properties": {"type": "OR", "values": [{"type": "AND", "values": [_prop("plan", "pro"),
            {**_prop("country", "FR"), "negation": True}]}]}},
    }  # fmt: skip
    assert evaluate_flag(flag, Person("a", {"plan": "pro", "country": "DE"}, inline_cohorts=inline)).enabled
    assert not evaluate_flag(flag, Person("a", {"plan": "pro", "country": "FR"}, inline_cohorts=inline)).enabled
    looped = {7: {"properties": {"type": "AND", "values": [{"key": "id", "type": "cohort", "value": 7}]}}}
    assert not evaluate_flag(flag, Person("a", inline_cohorts=looped)).enabled


def test_filters_this_evaluator_cannot_decide_do_not_match():
    for flt in (
        {"key": "name", "value": "acme", "type": "group", "group_type_index": 0},
        {"key": "other-flag", "value": True, "type": "flag", "operator": "flag_evaluates_to"},
        {"key": "v", "value": "1.0.0", "operator": "semver_gt", "type": "person"},
    ):
        flag = _flag([{"properties": [flt], "rollout_percentage": 100}])
        assert evaluate_flag(flag, Person("a", {"v": "2.0.0"})).reason == "no_condition_match"


def test_group_aggregated_flags_are_off_without_the_group():
    flag = _flag([{"properties": [], "rollout_percentage": 100}], aggregation_group_type_index=0)
    match = evaluate_flag(flag, Person("a"))
    assert (match.value, match.reason, reason_description(match)) == (False, "no_group_type", "No group type")
    # The type is known but the request names no group of it; or it names one of an unknown type.
    assert evaluate_flag(flag, Person("a", groups={"team": "t"}, group_types={0: "company"})).reason == "no_group_type"
    assert evaluate_flag(flag, Person("a", groups={"company": "acme"}, group_types={1: "company"})).reason == (
        "no_group_type")


def test_group_flags_hash_the_group_key_and_read_group_properties():
    pro = {"key": "plan", "value": ["pro"], "type": "group", "group_type_index": 0, "operator": "exact"}
    variants = [{"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]
    flag = _flag([{"properties": [pro], "rollout_percentage": 50}], variants, key="by-company",
                 aggregation_group_type_index=0)  # fmt: skip
    types = {0: "company"}
    seen = Counter()
    for i in range(400):
        company = f"co-{i}"
        person = Person(f"user-{i % 7}", {"plan": "free"}, groups={"company": company},
                        group_properties={"company": {"plan": "pro"}}, group_types=types)  # fmt: skip
        match = evaluate_flag(flag, person)
        # Every user of a company gets the company's answer: the hash is the company key's.
        assert match.value == (variant_for("by-company", company, variants) if in_rollout("by-company", company, 50)
                               else False)  # fmt: skip
        seen[match.value] += 1
    assert 150 < seen[False] < 250 and seen["control"] > 50 and seen["test"] > 50
    free = Person("u", {"plan": "pro"}, groups={"company": "co-1"}, group_properties={"company": {"plan": "free"}},
                  group_types=types)  # fmt: skip
    assert evaluate_flag(flag, free).reason == "no_condition_match"  # the person's plan is not the company's
    person_filter = _flag([{"properties": [{"key": "plan", "value": "pro", "type": "person"}]}],
                          aggregation_group_type_index=0)  # fmt: skip
    assert evaluate_flag(person_filter, Person("u", {"plan": "pro"}, groups={"company": "c"}, group_types=types)
                         ).reason == "no_condition_match"  # fmt: skip


@pytest.mark.parametrize(
    "filters",
    [{}, {"groups": None}, {"groups": "x"}, {"groups": [1, None, {"properties": "x"}]},
     {"groups": [{"properties": [1]}]}, {"multivariate": {"variants": [{"no": "key"}, 3]}, "groups": [{}]},
     {"groups": [{"rollout_percentage": "50"}]}, {"groups": [{"rollout_percentage": True}]}],
)  # fmt: skip
def test_malformed_filters_never_raise(filters):
    match = evaluate_flag(FlagSpec(1, "junk", filters), Person("a"))
    assert match.value in (True, False)
