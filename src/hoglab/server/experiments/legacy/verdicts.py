"""From a metric's answers to PostHog's result: variants checked, counts per variant, the verdict.

The statistics are ``hoglab.stats.posthog``'s (``trend_verdict``, ``funnel_verdict``): PostHog's definitions,
thresholds and decision order, computed deterministically, the same functions the client and notebooks use.

* ``check_variants``: PostHog's ``validate_event_variants``: no rows at all → 400 ``no-results``; rows but no
  control or no test variant → 400 ``invalid_input``; the detail is the JSON string of the four flags.
* Trends: each variant's ``count`` (whole events), ``absolute_exposure`` (exposed persons; 1 when none were
  found, as PostHog) and ``exposure`` relative to control's.
* Funnels: ``success_count`` = persons at the last step, ``failure_count`` = first step − last.
* Secondary metrics (``validate=False``) never fail for want of data: they answer what they have, the verdict only
  when one can be given (PostHog's ``get_results(validate=False)``).

>>> check_variants(["control"], ("control", "test"), any_rows=True)
Traceback (most recent call last):
...
hoglab.server.errors.ValidationFailed: {"no-events": false, "no-flag-info": false, "no-control-variant": false, "no-test-variant": true}
"""  # noqa: E501

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from hoglab.stats import (
    StatsInputError,
    posthog as posthog_rules,  # its verdicts (and SciPy) load on the first results asked for
)
from hoglab.stats.posthog import CONTROL_VARIANT_KEY, FunnelVariant, PostHogStatsError, TrendVariant

from ...errors import ValidationFailed
from .runs import FunnelRun, TrendRun

__all__ = ["NO_RESULTS_FLAGS", "check_variants", "funnel_result", "secondary_values", "trend_result", "trend_variants"]

NO_RESULTS_FLAGS = ("no-events", "no-flag-info", "no-control-variant", "no-test-variant")
"""PostHog's ``ExperimentNoResultsErrorKeys``, in the order its detail lists them."""


def check_variants(found: Sequence[Any], variants: Sequence[str], *, any_rows: bool) -> None:
    """Raise PostHog's no-data 400 unless ``found`` (breakdown values with data) has control and a test variant."""
    flags = dict.fromkeys(NO_RESULTS_FLAGS, True)
    if not any_rows:
        raise ValidationFailed(json.dumps(flags), code="no-results")
    flags["no-events"] = False
    tests = {v for v in variants if v != CONTROL_VARIANT_KEY}
    if CONTROL_VARIANT_KEY in found:
        flags["no-control-variant"] = flags["no-flag-info"] = False
    if any(value in tests for value in found):
        flags["no-test-variant"] = flags["no-flag-info"] = False
    if any(flags.values()):
        raise ValidationFailed(json.dumps(flags))


def _whole(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)


def _stats_error(exc: StatsInputError) -> ValidationFailed:
    # PostHog's own refusals keep their codes (no_data, too_much_data); other bad inputs (an exposure of 0 from
    # a custom exposure's math) are the metric's problem, said as such.
    return ValidationFailed(str(exc), code=exc.code if isinstance(exc, PostHogStatsError) else "invalid_input")


def trend_variants(run: TrendRun) -> list[TrendVariant]:
    """PostHog's ``get_variants`` for trends: control's exposure is 1, the others relative to it."""
    exposed = {item["breakdown_value"]: _whole(item["count"]) for item in run.exposures}
    control = exposed.get(CONTROL_VARIANT_KEY, 0)
    out = []
    for item in run.counts:
        key = item["breakdown_value"]
        relative = 1.0 if key == CONTROL_VARIANT_KEY or not control or key not in exposed else exposed[key] / control
        out.append(TrendVariant(key, int(item["count"]), relative, exposed.get(key, 1)))
    return out


def _with_verdict(basic: dict[str, Any], judge: Callable[[], dict[str, Any]], validate: bool) -> dict[str, Any]:
    """``basic`` plus the verdict ``judge`` gives; without ``validate``, ``basic`` alone when there is none."""
    try:
        verdict = judge()
    except ValidationFailed:
        if validate:
            raise
        return basic
    except StatsInputError as exc:
        if validate:
            raise _stats_error(exc) from None
        return basic
    return {**basic, **verdict}


def trend_result(run: TrendRun, variants: Sequence[str], *, validate: bool = True) -> dict[str, Any]:
    """``{insight, filters, exposure_filters, probability, significant, significance_code, p_value, variants,
    credible_intervals}``; without ``validate``, only the first three when there is no verdict to give."""

    def judge() -> dict[str, Any]:
        check_variants([item["breakdown_value"] for item in run.insight], variants, any_rows=bool(run.insight))
        verdict = posthog_rules.trend_verdict(trend_variants(run)).to_dict()
        for variant in verdict["variants"]:
            variant["absolute_exposure"] = _whole(variant["absolute_exposure"])
        return verdict

    basic = {"insight": run.insight, "filters": run.filters, "exposure_filters": run.exposure_filters}
    return _with_verdict(basic, judge, validate)


def _funnel_key(steps: list[dict[str, Any]]) -> Any:
    value = steps[0].get("breakdown_value")
    return value[0] if isinstance(value, list) and value else value


def funnel_result(run: FunnelRun, variants: Sequence[str], *, validate: bool = True) -> dict[str, Any]:
    """``{insight, filters, probability, significant, significance_code, expected_loss, variants,
    credible_intervals}``; ``insight`` keeps the variants' breakdowns only."""
    kept = [steps for steps in run.steps if steps and _funnel_key(steps) in variants]

    def judge() -> dict[str, Any]:
        found = [_funnel_key(steps) for steps in run.steps if steps]
        check_variants(found, variants, any_rows=bool(found))
        arms = []
        for steps in kept:
            success = int(steps[-1]["count"])
            arms.append(FunnelVariant(_funnel_key(steps), success, int(steps[0]["count"]) - success))
        return posthog_rules.funnel_verdict(arms).to_dict()

    return _with_verdict({"insight": kept, "filters": run.filters}, judge, validate)


def secondary_values(
    insight: list[Any], variants: Sequence[str], *, funnel: bool, per_user_math: bool
) -> dict[str, float]:
    """A secondary metric's value per variant: the cumulative count (a per-user math: its mean per interval),
    or the funnel's conversion rate rounded to 3 places."""
    values: dict[str, float] = {}
    for item in insight:
        if funnel:
            key, total, success = _funnel_key(item), int(item[0]["count"]), int(item[-1]["count"])
            if key in variants and total:
                values[key] = round(success / total, 3)
            continue
        key, count = item["breakdown_value"], item["count"]
        if per_user_math:
            count = count / max(len(item.get("data") or []), 1)
        if key in variants:
            values[key] = count
    return values
