"""Evaluate one feature flag for one person, as PostHog's flags service does.

A flag's ``filters`` hold condition ``groups`` (``properties``, ``rollout_percentage``, optional ``variant``),
``multivariate.variants`` and optional ``payloads``. The person matches the first group (groups with a variant
override are tried first, the rest in order, as PostHog sorts them) whose properties all match and whose
rollout includes them; the variant is the group's override when it names a variant, else the one
``flags.hashing.variant_for`` assigns. Hashing uses the distinct id, or the hash key of experience continuity.

A flag with ``aggregation_group_type_index`` is rolled out by group: its subject is the requester's group of
that type (``groups`` names it by type name, the project's group types give the name of the index), hashed on
the group key, its conditions read the group's properties (``type: "group"`` filters). Without that group in the
request the flag is off with reason ``no_group_type``, as PostHog answers.

>>> from hoglab.server.flags.evaluate import Person, evaluate_flag, FlagSpec
>>> spec = FlagSpec(1, "beta", {"groups": [{"properties": [], "rollout_percentage": 100}]})
>>> evaluate_flag(spec, Person("user-1")).value
True
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .hashing import bucket, variant_for
from .properties import UnsupportedFilter, match_property

__all__ = ["FlagMatch", "FlagSpec", "Person", "evaluate_flag", "filter_kind", "reason_description"]

log = logging.getLogger("hoglab.server.flags")

# Higher wins when no group matches: the most informative reason among the groups is reported (PostHog's order).
_SCORES = {"condition_match": 4, "out_of_rollout_bound": 3, "no_condition_match": 2, "no_group_type": 1}


@dataclass(frozen=True)
class FlagSpec:
    """What evaluation needs of a stored flag."""

    id: int
    key: str
    filters: Mapping[str, Any]
    ensure_experience_continuity: bool = False
    version: int | None = None

    @property
    def groups(self) -> list[Mapping[str, Any]]:
        groups = self.filters.get("groups") if isinstance(self.filters, Mapping) else None
        return [g for g in groups if isinstance(g, Mapping)] if isinstance(groups, list) else []

    @property
    def variants(self) -> list[Mapping[str, Any]]:
        multivariate = self.filters.get("multivariate") if isinstance(self.filters, Mapping) else None
        variants = multivariate.get("variants") if isinstance(multivariate, Mapping) else None
        if not isinstance(variants, list):
            return []
        return [v for v in variants if isinstance(v, Mapping) and isinstance(v.get("key"), str)]

    @property
    def aggregation_group_type_index(self) -> Any:
        return self.filters.get("aggregation_group_type_index") if isinstance(self.filters, Mapping) else None


@dataclass(frozen=True)
class Person:
    """Who is asking: the distinct id, their properties (stored ones with the request's overrides on top), the
    materialised cohorts they belong to, the cohort definitions that are evaluated inline, hash key overrides
    (flag key -> hash key, for experience continuity) and the project's time zone."""

    distinct_id: str
    properties: Mapping[str, Any] = field(default_factory=dict)
    cohort_members: frozenset[int] = frozenset()
    inline_cohorts: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    hash_keys: Mapping[str, str] = field(default_factory=dict)
    timezone: str = "UTC"
    # Group flags: the requester's groups (type name -> key), each group's properties (stored ones with the
    # request's on top, by type name), the project's group types (index -> name).
    groups: Mapping[str, str] = field(default_factory=dict)
    group_properties: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    group_types: Mapping[int, str] = field(default_factory=dict)
    # Whether this is a group standing in for the requester (a group flag's subject): group filters apply.
    is_group: bool = False

    def as_group(self, index: Any) -> Person | None:
        """The requester's group of type ``index`` as the subject of a group flag, or ``None`` without one."""
        name = self.group_types.get(index) if isinstance(index, int) and not isinstance(index, bool) else None
        key = self.groups.get(name) if name is not None else None
        if key is None or key == "":
            return None
        return Person(str(key), self.group_properties.get(str(name), {}), timezone=self.timezone, is_group=True)

    def hash_key(self, flag: FlagSpec) -> str:
        if flag.ensure_experience_continuity:
            return self.hash_keys.get(flag.key, self.distinct_id)
        return self.distinct_id


@dataclass(frozen=True)
class FlagMatch:
    """One flag's answer: ``value`` is the variant key, ``True``, or ``False``."""

    key: str
    enabled: bool
    variant: str | None
    reason: str
    condition_index: int | None
    payload: str | None = None
    failed: bool = False

    @property
    def value(self) -> bool | str:
        return self.variant if self.variant is not None else self.enabled


def reason_description(match: FlagMatch) -> str | None:
    """PostHog's human wording of a reason code."""
    if match.failed:
        return "Flag could not be evaluated"
    if match.reason == "condition_match":
        return f"Matched condition set {(match.condition_index or 0) + 1}"
    return {
        "no_condition_match": "No matching condition set",
        "out_of_rollout_bound": "Out of rollout bound",
        "no_group_type": "No group type",
    }.get(match.reason)


def filter_kind(flt: Mapping[str, Any]) -> str:
    """``person`` (the default), ``cohort``, or another type PostHog knows (``group``, ``flag``, ...)."""
    kind = flt.get("type")
    return kind if isinstance(kind, str) and kind else "person"


def _rollout(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _cohort_id(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _match_cohort_group(group: Any, person: Person, seen: frozenset[int]) -> bool:
    """A cohort definition's property group (``{"type": "AND"|"OR", "values": [...]}``), evaluated inline."""
    if not isinstance(group, Mapping):
        return False
    values = group.get("values")
    if "values" in group and isinstance(values, list):
        results = [_match_cohort_group(v, person, seen) for v in values]
        matched = all(results) if group.get("type") == "AND" else any(results)
    else:
        matched = _match_filter(group, person, seen)
    return matched != bool(group.get("negation"))


def _in_cohort(cohort_id: int, person: Person, seen: frozenset[int]) -> bool:
    if cohort_id in person.inline_cohorts and cohort_id not in seen:
        definition = person.inline_cohorts[cohort_id]
        properties = definition.get("properties") if isinstance(definition, Mapping) else None
        return _match_cohort_group(properties, person, seen | {cohort_id})
    return cohort_id in person.cohort_members


def _match_filter(flt: Mapping[str, Any], person: Person, seen: frozenset[int] = frozenset()) -> bool:
    kind = filter_kind(flt)
    if kind == "cohort":
        cohort_id = _cohort_id(flt.get("value"))
        member = cohort_id is not None and _in_cohort(cohort_id, person, seen)
        return member != (flt.get("operator") == "not_in")
    if kind == "group" and person.is_group:
        return match_property(flt, person.properties, timezone=person.timezone)
    if kind != "person" or person.is_group:
        # Flag dependencies, events, group filters of a person flag, person filters of a group flag: not decided.
        raise UnsupportedFilter(kind)
    return match_property(flt, person.properties, timezone=person.timezone)


def _condition(flag: FlagSpec, group: Mapping[str, Any], person: Person) -> str:
    """The reason code of one condition group: ``condition_match`` or why not."""
    properties = group.get("properties")
    rollout = _rollout(group.get("rollout_percentage"))
    if isinstance(properties, list) and properties:
        for flt in properties:
            if not isinstance(flt, Mapping):
                return "no_condition_match"
            try:
                if not _match_filter(flt, person):
                    return "no_condition_match"
            except UnsupportedFilter as exc:
                log.debug("flag %s: filter type or operator %s is not evaluated here", flag.key, exc)
                return "no_condition_match"
        if rollout is None:
            return "condition_match"
    # PostHog's bound is inclusive: the bucket is in [0, 1) and a person at exactly the bound is in.
    if rollout is not None and bucket(flag.key, person.hash_key(flag)) > rollout / 100:
        return "out_of_rollout_bound"
    return "condition_match"


def _payload(flag: FlagSpec, variant: str | None) -> str | None:
    payloads = flag.filters.get("payloads") if isinstance(flag.filters, Mapping) else None
    if not isinstance(payloads, Mapping):
        return None
    payload = payloads.get(variant if variant is not None else "true")
    if payload is None or isinstance(payload, str):
        return payload
    # Payloads are JSON text on the wire; a stored object is encoded the way PostHog would have stored it.
    try:
        return orjson.dumps(payload).decode()
    except TypeError:
        return None


def evaluate_flag(flag: FlagSpec, person: Person) -> FlagMatch:
    """The flag's value for ``person`` with PostHog's reason code and condition index."""
    if flag.aggregation_group_type_index is not None and not person.is_group:
        subject = person.as_group(flag.aggregation_group_type_index)
        if subject is None:
            return FlagMatch(flag.key, False, None, "no_group_type", None)
        return evaluate_flag(flag, subject)
    groups = flag.groups
    variants = flag.variants
    variant_keys = {str(v["key"]) for v in variants}
    order: Sequence[tuple[int, Mapping[str, Any]]] = sorted(
        enumerate(groups), key=lambda item: 0 if item[1].get("variant") else 1
    )
    best_reason, best_index = "no_condition_match", 0 if groups else None
    for index, group in order:
        reason = _condition(flag, group, person)
        if reason == "condition_match":
            override = group.get("variant")
            if isinstance(override, str) and override in variant_keys:
                variant: str | None = override
            else:
                variant = variant_for(flag.key, person.hash_key(flag), variants) if variants else None
            return FlagMatch(flag.key, True, variant, reason, index, _payload(flag, variant))
        if _SCORES[reason] > _SCORES[best_reason]:
            best_reason, best_index = reason, index
    return FlagMatch(flag.key, False, None, best_reason, best_index)
