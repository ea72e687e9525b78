"""What a remote project's settings must be before the mirror stores them: its time zone, its flags' filters, its
cohorts' definitions, its experiments' fields and metrics, its actions' steps.

``hoglab.pull.answers`` has already checked that each answer has the shape its endpoint answers (an id is a whole
number, ``filters`` an object); these are the checks that need the service's rules: the zone is one ClickHouse
knows, a flag's conditions and variants are what evaluation reads, a cohort's tree is one membership can be
computed from, an experiment is one the API would accept. A setting that fails is a
:class:`~hoglab.errors.RemoteAnswerError` naming the object and the field, raised before anything of the pull is
stored. What hoglab cannot use but PostHog can (a ``regex`` RE2 cannot compile, a metric kind hoglab does not run)
is not an error: it is kept out (or disabled) and said in a warning, so the rest of the copy goes on. An action
whose steps hoglab refuses (a CSS ``selector``, a pattern RE2 can't compile) is kept, as PostHog keeps one that
fails to compile: the reason goes in its ``bytecode_error``, and a query naming it says it.

>>> try:
...     flag_fields({"id": 1, "key": "beta", "filters": {"groups": [{"rollout_percentage": 250}]}})
... except RemoteAnswerError as exc:
...     print(exc.field, "|", exc.expected, "|", exc.got)
flag 'beta' (remote id 1): filters.groups[0].rollout_percentage | a number from 0 to 100 | 250
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from hoglab.errors import HoglabError, RemoteAnswerError
from hoglab.schema import ExperimentCreate, ExperimentUpdate

from ..engine.base import Engine
from ..engine.settings import quote_string
from ..errors import ValidationFailed
from ..experiments.rules import MODEL_ERROR_ATTRS, check_metric_filters, metric_fields, usable_metric_fields
from ..filters.actions import check_steps, normalized_step
from ..filters.patterns import invalid_patterns
from ..store.records import usable_timezone
from ..validation import validate_body

__all__ = ["MAX_COHORT_DEPTH", "action_fields", "check_timezone", "cohort_fields", "experiment_changes",
           "experiment_fields", "flag_fields", "holdout_fields", "saved_metric_fields"]  # fmt: skip

# PostHog's editor makes two levels (a group of groups of filters); deeper trees only come from the API. A bound
# keeps evaluation's recursion far from Python's limit whatever a remote sends.
MAX_COHORT_DEPTH = 16
_ZONE_EXAMPLE = "an IANA time zone ClickHouse knows (such as 'Europe/Berlin')"


def _at(path: str, name: str | int) -> str:
    return f"{path}[{name}]" if isinstance(name, int) else f"{path}.{name}"


def _bad(what: str, path: str, expected: str, got: Any) -> RemoteAnswerError:
    return RemoteAnswerError(f"{what}: {path}" if path else what, expected, got)


# -- the project -----------------------------------------------------------------------------------------------------


def check_timezone(engine: Engine, name: Any) -> str:
    """``name`` when it is an IANA zone both Python's tz database and the engine know; the error names it."""
    known = usable_timezone(name)
    if known:
        table = engine.execute(
            f"SELECT count() AS n FROM system.time_zones WHERE time_zone = {quote_string(name)}",
            settings={"max_result_rows": 0},
        )
        known = int(table.column("n")[0].as_py()) == 1
    if not known:
        raise RemoteAnswerError("timezone", _ZONE_EXAMPLE, name)
    return str(name)


# -- flags -----------------------------------------------------------------------------------------------------------


def _percentage(value: Any) -> bool:
    return (
        not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 100
    )


def _objects(what: str, path: str, value: Any, list_of: str, one: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each object of the list ``value`` with its path; nothing when it is missing, an error when it is not a list
    of objects (``list_of``, ``one``: what was expected, for the error)."""
    if value is None:
        return
    if not isinstance(value, list):
        raise _bad(what, path, list_of, value)
    for i, item in enumerate(value):
        where = _at(path, i)
        if not isinstance(item, dict):
            raise _bad(what, where, one, item)
        yield where, item


def _check_conditions(what: str, path: str, groups: Any) -> None:
    for where, group in _objects(what, path, groups, "a list of condition groups", "a condition group (an object)"):
        rollout = group.get("rollout_percentage")
        if rollout is not None and not _percentage(rollout):
            raise _bad(what, _at(where, "rollout_percentage"), "a number from 0 to 100", rollout)
        variant = group.get("variant")
        if variant is not None and not isinstance(variant, str):
            raise _bad(what, _at(where, "variant"), "a variant key (text)", variant)
        _check_filters(what, _at(where, "properties"), group.get("properties"))


def _check_filters(what: str, path: str, filters: Any) -> None:
    for where, flt in _objects(what, path, filters, "a list of property filters", "a property filter (an object)"):
        key = flt.get("key")
        if isinstance(key, bool) or not isinstance(key, str | int):
            raise _bad(what, _at(where, "key"), "a property key (text)", key)
        for name in ("type", "operator"):
            if flt.get(name) is not None and not isinstance(flt[name], str):
                raise _bad(what, _at(where, name), f"a filter {name} (text)", flt[name])


def flag_fields(remote: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The fields of a flag's copy, its filters checked as evaluation reads them, and the warnings to say."""
    what = f"flag {remote['key']!r} (remote id {remote['id']})"
    filters = remote.get("filters") or {}
    _check_conditions(what, "filters.groups", filters.get("groups"))
    _check_conditions(what, "filters.super_groups", filters.get("super_groups"))
    multivariate = filters.get("multivariate")
    if multivariate is not None:
        variants = multivariate.get("variants") if isinstance(multivariate, dict) else None
        if not isinstance(variants, list):
            raise _bad(what, "filters.multivariate.variants", "a list of variants", variants)
        keys: set[str] = set()
        for i, variant in enumerate(variants):
            where = f"filters.multivariate.variants[{i}]"
            if not isinstance(variant, dict) or not isinstance(variant.get("key"), str) or not variant["key"]:
                raise _bad(what, where, "a variant with a key (text)", variant)
            if variant["key"] in keys:
                raise _bad(what, _at(where, "key"), "each variant key once", variant["key"])
            keys.add(variant["key"])
            if not _percentage(variant.get("rollout_percentage")):
                raise _bad(what, _at(where, "rollout_percentage"), "a number from 0 to 100",
                           variant.get("rollout_percentage"))  # fmt: skip
        total = sum(float(v["rollout_percentage"]) for v in variants)
        if variants and abs(total - 100) > 0.01:
            raise _bad(what, "filters.multivariate.variants", "rollout percentages that sum to 100", total)
    for name, kind in (("payloads", dict), ("holdout_groups", list)):
        if filters.get(name) is not None and not isinstance(filters[name], kind):
            raise _bad(what, f"filters.{name}", "an object" if kind is dict else "a list", filters[name])
    index = filters.get("aggregation_group_type_index")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= 4):
        raise _bad(what, "filters.aggregation_group_type_index", "a group type index from 0 to 4", index)
    fields = {
        "name": remote.get("name") or "",
        "filters": dict(filters),
        "active": bool(remote.get("active", True)),
        "ensure_experience_continuity": bool(remote.get("ensure_experience_continuity")),
    }
    return fields, _disabled_patterns(what, filters)


def _disabled_patterns(what: str, filters: Mapping[str, Any]) -> list[str]:
    """The regex conditions of a copied definition that never match here: RE2 cannot compile their pattern (a
    lookaround, a backreference), so they are stored as the remote has them and evaluate as PostHog's flags
    service evaluates a pattern it cannot compile, as not matching; the rest of the copy goes on."""
    return [f"{what}: the condition {problem} is disabled (never matches)" for problem in invalid_patterns(filters)]


# -- cohorts ---------------------------------------------------------------------------------------------------------


def _check_cohort_node(what: str, path: str, node: Any, depth: int) -> None:
    if depth > MAX_COHORT_DEPTH:
        raise _bad(what, path, f"groups nested at most {MAX_COHORT_DEPTH} deep", "deeper")
    if not isinstance(node, dict):
        raise _bad(what, path, "a group or a filter (an object)", node)
    if node.get("negation") is not None and not isinstance(node["negation"], bool):
        raise _bad(what, _at(path, "negation"), "true or false", node["negation"])
    if "values" in node:
        if node.get("type") not in ("AND", "OR"):
            raise _bad(what, _at(path, "type"), "'AND' or 'OR'", node.get("type"))
        values = node["values"]
        if not isinstance(values, list):
            raise _bad(what, _at(path, "values"), "a list of groups or filters", values)
        for i, value in enumerate(values):
            _check_cohort_node(what, _at(_at(path, "values"), i), value, depth + 1)
        return
    kind = node.get("type")
    if not isinstance(kind, str) or not kind:
        raise _bad(what, _at(path, "type"), "a filter type (text: 'person', 'cohort', 'behavioral', ...)", kind)
    key = node.get("key")
    if isinstance(key, bool) or not isinstance(key, str | int):
        raise _bad(what, _at(path, "key"), "a key (text, or an action's id)", key)
    value = node.get("value")
    if kind == "cohort" and (isinstance(value, bool) or not isinstance(value, int)):
        raise _bad(what, _at(path, "value"), "a cohort id (a whole number)", value)
    if kind == "behavioral":
        if not isinstance(value, str):
            raise _bad(what, _at(path, "value"), "a behaviour (text such as 'performed_event')", value)
        for name in ("time_value",):
            number = node.get(name)
            if number is not None and (isinstance(number, bool) or not isinstance(number, int | float | str)):
                raise _bad(what, _at(path, name), "a number", number)
        if node.get("event_filters") is not None:
            _check_filters(what, _at(path, "event_filters"), node["event_filters"])


def cohort_fields(remote: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The fields of a cohort's copy, its definition checked as membership reads it, and the warnings to say."""
    name = remote.get("name") or ""
    what = f"cohort {name!r} (remote id {remote['id']})"
    filters = remote.get("filters") or {}
    properties = filters.get("properties")
    if properties is not None:
        _check_cohort_node(what, "filters.properties", properties, 1)
    fields = {"name": name, "description": remote.get("description") or "", "filters": dict(filters),
              "is_static": bool(remote.get("is_static"))}  # fmt: skip
    return fields, _disabled_patterns(what, filters)


# -- experiments -----------------------------------------------------------------------------------------------------


def _as_remote(what: str, check: Callable[[], Any]) -> Any:
    """``check()``; an API refusal (a 400 with ``attr``) said as the remote's setting that caused it."""
    try:
        return check()
    except HoglabError as exc:
        detail, attr = getattr(exc, "detail", str(exc)), getattr(exc, "attr", None)
        field = str(attr).replace("__", ".") if attr else None
        raise RemoteAnswerError(f"{what}: {field}" if field else what, f"what the API accepts ({detail})") from None


def experiment_fields(remote: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The create body of a new experiment's copy, checked as the API checks a create, and the warnings to say:
    metrics hoglab cannot run (data warehouse, newer kinds) are left out, not refused."""
    what = f"experiment {remote.get('name')!r} (remote id {remote['id']})"
    # The holdout and the saved metrics are the remote's ids: the mirror links the local copies instead.
    given = {k: remote[k] for k in ExperimentCreate.model_fields
             if remote.get(k) is not None and k not in ("holdout_id", "saved_metrics_ids")}  # fmt: skip
    fields = usable_metric_fields(given)
    warnings = [
        f"{what}: {len(given[name]) - len(fields[name])} of its {name} cannot run here and were left out"
        for name in ("metrics", "metrics_secondary")
        if isinstance(given.get(name), list) and len(given[name]) != len(fields[name])
    ]
    payload = _as_remote(what, lambda: validate_body(ExperimentCreate, dict(fields),
                                                     model_error_attrs=MODEL_ERROR_ATTRS))  # fmt: skip
    _as_remote(what, lambda: check_metric_filters(fields.get("filters")))
    _as_remote(what, lambda: metric_fields(payload))
    return fields, warnings


def experiment_changes(remote: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The fields ``names`` of an experiment copied before, as a second pull updates them, checked as the API
    checks a PATCH."""
    what = f"experiment {remote.get('name')!r} (remote id {remote['id']})"
    changes = {name: remote[name] for name in names if name in remote}
    for name in ("description",):
        if name in changes and changes[name] is None:
            changes[name] = ""
    if "archived" in changes:
        changes["archived"] = bool(changes["archived"])
    _as_remote(what, lambda: validate_body(ExperimentUpdate, dict(changes), model_error_attrs=MODEL_ERROR_ATTRS))
    if "filters" in changes:
        _as_remote(what, lambda: check_metric_filters(changes["filters"]))
    start, end = changes.get("start_date"), changes.get("end_date")
    if start is not None and end is not None and end <= start:
        raise RemoteAnswerError(f"{what}: end_date", "an end after the start", end)
    return changes


# -- experiment holdouts and saved metrics ----------------------------------------------------------------------------


def holdout_fields(remote: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The fields of a holdout's copy, its groups checked as flag evaluation reads them (the first group's
    ``rollout_percentage`` is the share held out), and the warnings to say. Each group keeps the remote's value,
    ``holdout-<remote id>``, which the copied flags answer and the copied events carry.

    >>> holdout_fields({"id": 7, "name": "Q3", "filters": [{"rollout_percentage": 10, "variant": "holdout-7"}]})[0]
    {'name': 'Q3', 'description': None, 'filters': [{'rollout_percentage': 10, 'variant': 'holdout-7'}]}
    """
    remote_id = remote["id"]
    name = str(remote.get("name") or f"holdout {remote_id}")
    what = f"holdout {name!r} (remote id {remote_id})"
    groups = remote.get("filters") or []
    _check_conditions(what, "filters", groups)
    filters = [{**group, "variant": group.get("variant") or f"holdout-{remote_id}"} for group in groups]
    return {"name": name, "description": remote.get("description"), "filters": filters}, []


def saved_metric_fields(remote: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The fields of a saved metric's copy (its query as the remote holds it, ``uuid`` included: experiments order
    their metrics by it) and the warnings to say: a metric hoglab cannot run is kept, said in a warning (its
    results will be that metric's error, the rest of the experiment analysed).

    >>> saved_metric_fields({"id": 3, "name": "m", "query": {"metric_type": "funnel"}})[1]
    ["saved metric 'm' (remote id 3): its metric cannot run here (it is kept as the remote holds it)"]
    """
    remote_id = remote["id"]
    name = str(remote.get("name") or f"saved metric {remote_id}")
    query = dict(remote.get("query") or {})
    fields = {"name": name, "description": remote.get("description"), "query": query,
              "tags": [tag for tag in remote.get("tags") or [] if isinstance(tag, str)]}  # fmt: skip
    runnable = usable_metric_fields({"metrics": [query]})["metrics"]
    warnings = [] if runnable else [
        f"saved metric {name!r} (remote id {remote_id}): its metric cannot run here (it is kept as the remote holds it)"
    ]  # fmt: skip
    return fields, warnings


# -- actions ---------------------------------------------------------------------------------------------------------


def action_fields(remote: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The columns of an action's copy (steps with PostHog's ten keys, checked as the API checks them), and the
    warnings to say: steps hoglab refuses are kept as copied, with the reason in ``bytecode_error``.

    >>> fields, warnings = action_fields({"id": 3, "name": "Clicked", "steps": [{"event": "$autocapture",
    ...                                                                        "selector": "a.btn"}]})
    >>> fields["bytecode_error"].startswith("steps.0.selector"), len(warnings)
    (True, 1)
    """
    raw = remote.get("steps")
    steps = [normalized_step(s) for s in (raw if isinstance(raw, list) else []) if isinstance(s, Mapping)]
    error, warnings = None, []
    try:
        steps = check_steps(steps)  # the project's zone only matters to date filters, which compile alike
    except ValidationFailed as exc:
        error = f"{exc.attr}: {exc.detail}" if exc.attr else str(exc.detail)
        warnings.append(f"action {remote.get('name')!r} (remote id {remote['id']}) is copied but can't be used "
                        f"here: {error}")  # fmt: skip
    name = remote.get("name")
    fields: dict[str, Any] = {
        "name": None if name is None else str(name)[:400],
        "description": str(remote.get("description") or ""),
        "tags": [str(t) for t in remote.get("tags") or [] if isinstance(t, str | int)],
        "steps": steps,
        "deleted": bool(remote.get("deleted")),
        "bytecode_error": error,
    }
    return fields, warnings
