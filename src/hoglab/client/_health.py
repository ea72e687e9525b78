"""An experiment's health checks, read from its set-up and its results (``results(...).health``).

The statistics (:func:`hoglab.stats.srm_check`, :func:`hoglab.stats.bias_risk`) take counts and sums; here they get
them from the experiment and its answers, beside the checks of the set-up:

* ``no_metrics`` (critical): a metric experiment without a metric has nothing to decide it;
* ``flag_state`` (critical when off): a running experiment whose flag is off (or deleted) exposes nobody new;
* ``forced_variants`` (warning): a release condition that hands a fixed variant to the users it matches; they are
  not randomised, so their arm differs from the others by more than the change;
* ``no_exposures``: nobody exposed yet (warning), or a planned variant nobody was exposed to (critical);
* ``sample_ratio_mismatch``: every arm, the holdout's included, against the planned split (a holdout of share h
  leaves each variant (1 − h)·w of all exposed units);
* ``bias_risk``: the pre-period balance of the first primary metric's CUPED covariate (PostHog's name).

>>> flag = {"active": False, "filters": {"groups": [{"properties": [], "rollout_percentage": 100,
...         "variant": "test"}], "multivariate": {"variants": [{"key": "control", "rollout_percentage": 50},
...         {"key": "test", "rollout_percentage": 50}]}}}
>>> [c.severity.value for c in setup_checks({"start_date": "2025-01-01", "feature_flag": flag})]
['critical', 'warning']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..stats import Health, HealthCheck, Severity, bias_risk, planned_shares, srm_check
from ._verdict import planned_split

if TYPE_CHECKING:
    from ._legacy_results import ExperimentResult
    from ._metric_results import MetricExperimentResult

__all__ = ["holdout_share", "legacy_health", "metric_health", "setup_checks"]


def _flag(experiment: Mapping[str, Any]) -> Mapping[str, Any]:
    flag = experiment.get("feature_flag")
    return flag if isinstance(flag, Mapping) else {}


def setup_checks(experiment: Mapping[str, Any]) -> list[HealthCheck]:
    """``flag_state`` and ``forced_variants`` from the experiment's flag (none without a flag)."""
    flag = _flag(experiment)
    if not flag:
        return []
    running = bool(experiment.get("start_date")) and not experiment.get("end_date")
    checks = []
    if flag.get("deleted"):
        checks.append(HealthCheck("flag_state", Severity.CRITICAL, "the experiment's flag is deleted: nobody is "
                                  "exposed any more."))  # fmt: skip
    elif flag.get("active") is False:
        severity = Severity.CRITICAL if running else Severity.WARNING
        checks.append(HealthCheck("flag_state", severity, "the experiment's flag is off: nobody new is exposed"
                                  + (" while the experiment runs." if running else ".")))  # fmt: skip
    else:
        checks.append(HealthCheck("flag_state", Severity.OK, "the flag is on."))
    filters = flag.get("filters") if isinstance(flag.get("filters"), Mapping) else {}
    groups = [g for g in (filters or {}).get("groups") or [] if isinstance(g, Mapping)]
    forced = [(i, g) for i, g in enumerate(groups, 1) if g.get("variant")]
    if forced:
        def share(group: Mapping[str, Any]) -> str:
            value = group.get("rollout_percentage")
            return f"{float(value):g}%" if isinstance(value, int | float) else "100%"

        said = "; ".join(f"release condition {i} hands {g['variant']!r} to {share(g)} of the users it matches"
                         for i, g in forced)  # fmt: skip
        checks.append(HealthCheck("forced_variants", Severity.WARNING, f"{said}: they are not randomised, so their "
                                  "arm differs by more than the change.", float(len(forced))))  # fmt: skip
    else:
        checks.append(HealthCheck("forced_variants", Severity.OK, "no release condition forces a variant."))
    return checks


def holdout_share(holdout: Mapping[str, Any] | None) -> float | None:
    """The share of all persons a holdout keeps out (its group's rollout %), None when it cannot be known (a
    holdout restricted by properties holds out a share of those who match them only).

    >>> holdout_share({"filters": [{"properties": [], "rollout_percentage": 20}]})
    0.2
    """
    if not isinstance(holdout, Mapping):
        return None
    filters = holdout.get("filters")
    if not isinstance(filters, list) or len(filters) != 1 or not isinstance(filters[0], Mapping):
        return None
    group = filters[0]
    if group.get("properties"):
        return None
    try:
        share = float(group.get("rollout_percentage")) / 100  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return share if 0.0 <= share < 1.0 else None


def _exposure_checks(totals: Mapping[str, float], split: Mapping[str, float], holdout: tuple[str, float] | None,
                     running: bool) -> list[HealthCheck]:  # fmt: skip
    arms = {k: float(v) for k, v in totals.items() if k != "$multiple"}
    planned_arms = list(split) + ([holdout[0]] if holdout else [])
    if sum(arms.values()) <= 0:
        severity = Severity.WARNING if running else Severity.OK
        reason = "nobody has been exposed yet." if running else "the experiment has not started."
        return [HealthCheck("no_exposures", severity, reason, 0.0)]
    missing = [k for k in planned_arms if arms.get(k, 0.0) <= 0]
    checks = []
    if missing:
        checks.append(HealthCheck("no_exposures", Severity.CRITICAL, f"nobody was exposed to {', '.join(missing)} "
                                  "although the plan gives it a share: check the flag and the exposure event.",
                                  float(len(missing))))  # fmt: skip
    else:
        checks.append(HealthCheck("no_exposures", Severity.OK, f"every arm has exposures ({sum(arms.values()):,.0f}"
                                  " in all).", 0.0))  # fmt: skip
    observed = {k: arms.get(k, 0.0) for k in planned_arms} if split else arms
    shares = planned_shares(split, holdout) if split else None
    checks.append(srm_check(observed, shares))
    return checks


def metric_health(result: MetricExperimentResult) -> Health:
    """Every check of a metric experiment (see the module)."""
    experiment = result.experiment
    checks = []
    if not result.metrics:
        checks.append(HealthCheck("no_metrics", Severity.CRITICAL, "the experiment has no metric: nothing can decide "
                                  "it."))  # fmt: skip
    else:
        checks.append(HealthCheck("no_metrics", Severity.OK, f"{len(result.metrics)} metric"
                                  f"{'s' if len(result.metrics) != 1 else ''}.", float(len(result.metrics))))
    checks += setup_checks(experiment)
    running = bool(experiment.get("start_date")) and not experiment.get("end_date")
    split = planned_split(experiment)
    key, share = result.holdout_key, holdout_share(result.holdout)
    holdout = (key, share) if key is not None and share is not None and share > 0 else None
    if result.exposures is not None:
        checks += _exposure_checks(result.total_exposures, split, holdout, running)
    primary = [a for a in result.metrics if a.role == "primary" and a.answer is not None]
    if primary:
        answer = primary[0].answer
        assert answer is not None
        arms = [answer.get("baseline"), *(answer.get("variant_results") or [])]
        if all(isinstance(a, Mapping) and a.get("covariate_sum") is not None for a in arms):
            sums = {str(a["key"]): (float(a.get("number_of_samples") or 0), float(a["covariate_sum"]),
                                    float(a.get("covariate_sum_squares") or 0)) for a in arms}  # fmt: skip
            control = str(arms[0]["key"])
            check = bias_risk(sums, control)
            checks.append(HealthCheck(check.name, check.severity, f"{primary[0].label}: {check.reason}", check.value))
    return Health(tuple(checks))


def legacy_health(result: ExperimentResult) -> Health:
    """The checks of a legacy experiment: the flag, and the split of its variants' counts (funnels: persons)."""
    experiment = result.experiment or {}
    checks = setup_checks(experiment)
    if result.kind == "funnel":
        frame = result.to_frame()
        totals = {str(k): float(s) + float(f) for k, s, f in
                  zip(frame["key"], frame["success_count"], frame["failure_count"], strict=True)}  # fmt: skip
        running = bool(experiment.get("start_date")) and not experiment.get("end_date")
        split = planned_split(experiment)
        checks += _exposure_checks(totals, split if set(split) == set(totals) else {}, None, running)
    return Health(tuple(checks))
