"""A metric experiment's statistics settings (PostHog's ``stats_config``), built from Python arguments.

:func:`stats_config` returns the dict :meth:`hoglab.Client.experiments.create` (or ``update``) stores: the method,
sequential testing (frequentist only), CUPED and its lookback, hoglab's ratio CUPED extension, the baseline arm.
Keys left out fall back, at query time, to the project's defaults (``experiments_config``) and then PostHog's.

>>> stats_config("frequentist", sequential=True, cuped=7)
{'method': 'frequentist', 'frequentist': {'sequential_testing_enabled': True}, 'cuped': {'enabled': True, \
'lookback_days': 7}}
>>> stats_config(cuped=False)
{'method': 'bayesian', 'cuped': {'enabled': False}}
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import InvalidArgument, InvalidArgumentType
from ._args import check_choice

__all__ = ["stats_config"]


def _fraction(argument: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise InvalidArgument(f"{argument}: a number strictly between 0 and 1, got {value!r}.", argument=argument)
    return float(value)


def stats_config(
    method: Literal["bayesian", "frequentist"] = "bayesian",
    *,
    sequential: bool | float | None = None,
    cuped: bool | int | None = None,
    ratio_cuped: bool = False,
    cuped_variance: Literal["posthog", "delta"] | None = None,
    alpha: float | None = None,
    ci_level: float | None = None,
    difference: Literal["relative", "absolute"] | None = None,
    baseline: str | None = None,
    correction: Literal["holm", "bh", "bonferroni"] | None = None,
) -> dict[str, Any]:
    """PostHog's ``stats_config`` for an experiment.

    ``sequential``: always-valid p-values and confidence sequences (frequentist only; ``True``, or the tuning
    parameter N*, PostHog's default 5,000); ``False`` turns a project default off. ``cuped``: ``True`` (14-day
    lookback), a lookback in days (1-30), or ``False`` to turn a project default off. ``ratio_cuped``: hoglab's
    extension, CUPED for ratio metrics too (PostHog has none). ``cuped_variance="delta"``: hoglab's extension, the
    service answers with the delta-method variance of CUPED's relative effect (calibrated; PostHog's formula is the
    default, so answers equal PostHog's; hoglab's own views use the calibrated one either way).
    ``alpha`` (frequentist) and ``ci_level`` (Bayesian);
    ``difference``: the effect tested, ``relative`` (PostHog's default) or ``absolute``; ``baseline``: the variant
    every other is compared with (``control`` by default); ``correction``: hoglab's extension
    ``multiple_comparisons``, Holm or Benjamini–Hochberg (``"bh"``) across the primary and secondary metrics and
    their variants, which hoglab's views read beside the raw p-values (PostHog has none).

    >>> stats_config("frequentist", sequential=2000, alpha=0.1)["frequentist"]
    {'sequential_testing_enabled': True, 'sequential_tuning_parameter': 2000.0, 'alpha': 0.1}
    >>> stats_config(sequential=True)
    Traceback (most recent call last):
    hoglab.errors.InvalidArgument: sequential: sequential testing is frequentist; pass method="frequentist".
    """
    check_choice("method", method, "bayesian frequentist")
    config: dict[str, Any] = {"method": method}
    section: dict[str, Any] = {}
    if sequential is not None:
        if method != "frequentist" and sequential is not False:
            raise InvalidArgument('sequential: sequential testing is frequentist; pass method="frequentist".',
                                  argument="sequential")  # fmt: skip
        if isinstance(sequential, bool):
            section["sequential_testing_enabled"] = sequential
        elif isinstance(sequential, int | float) and 1 <= sequential <= 1_000_000_000:
            section["sequential_testing_enabled"] = True
            section["sequential_tuning_parameter"] = float(sequential)
        else:
            raise InvalidArgument(f"sequential: True, False or a tuning parameter in [1, 1e9], got {sequential!r}.",
                                  argument="sequential")  # fmt: skip
    if alpha is not None:
        if method != "frequentist":
            raise InvalidArgument('alpha: a frequentist setting; pass method="frequentist".', argument="alpha")
        section["alpha"] = _fraction("alpha", alpha)
    if ci_level is not None:
        if method != "bayesian":
            raise InvalidArgument("ci_level: a Bayesian setting.", argument="ci_level")
        section["ci_level"] = _fraction("ci_level", ci_level)
    if difference is not None:
        section["difference_type"] = check_choice("difference", difference, "relative absolute").upper()
    if section:
        config[method] = section
    if cuped is not None:
        if isinstance(cuped, bool):
            config["cuped"] = {"enabled": cuped}
        elif isinstance(cuped, int) and 1 <= cuped <= 30:
            config["cuped"] = {"enabled": True, "lookback_days": cuped}
        else:
            raise InvalidArgument(f"cuped: True, False or a lookback of 1-30 days, got {cuped!r}.", argument="cuped")
    if ratio_cuped:
        if not (config.get("cuped") or {}).get("enabled"):
            raise InvalidArgument("ratio_cuped: turn cuped on too.", argument="ratio_cuped")
        config["cuped"]["ratio"] = True
    if cuped_variance is not None:
        check_choice("cuped_variance", cuped_variance, "posthog delta")
        if not (config.get("cuped") or {}).get("enabled"):
            raise InvalidArgument("cuped_variance: turn cuped on too.", argument="cuped_variance")
        config["cuped"]["variance"] = cuped_variance
    if correction is not None:
        config["multiple_comparisons"] = check_choice("correction", correction, "holm bh bonferroni")
    if baseline is not None:
        if not isinstance(baseline, str) or not baseline:
            raise InvalidArgumentType("baseline: a variant key.", argument="baseline")
        config["baseline_variant_key"] = baseline
    return config
