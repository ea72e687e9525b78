"""Health checks of an experiment: can its results be trusted at all? Each has a name, a severity and a reason.

The checks that are statistics live here; those that read the experiment's set-up (flag state, forced variants,
exposures, metrics) are built by the client (``hoglab.client``) with :class:`HealthCheck` and gathered in a
:class:`Health`, which every view shows (results, frames, the picker, the report). Names are PostHog's where
PostHog has one (``bias_risk``, ``sample_ratio_mismatch``).

* :func:`srm_check`: the traffic split of every arm, the holdout's included, against the plan (a holdout of share
  h leaves each variant (1 − h)·w of all units), by :func:`hoglab.stats.srm` (Pearson's χ², equal to
  ``scipy.stats.chisquare``); p < 0.001 is critical.
* :func:`bias_risk`: the pre-period balance of CUPED's covariate (the same metric before exposure): each variant's
  pre-exposure mean against the control's, Welch's t-test (Holm across variants). A difference randomisation
  should not produce (p < 0.001) is critical; p < 0.05 a warning: CUPED corrects a chance imbalance, the
  unadjusted lift does not.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pandas as pd
from scipy import special

from ._errors import StatsError
from ._frequentist.corrections import adjust_pvalues
from ._srm import SRM_THRESHOLD, srm

__all__ = ["Health", "HealthCheck", "Severity", "bias_risk", "planned_shares", "srm_check"]

BIAS_WARNING = 0.05
BIAS_CRITICAL = 0.001


class Severity(StrEnum):
    """How much a failed check matters: ``ok``; ``warning`` (read the results with care); ``critical`` (do not
    trust them until the cause is found)."""

    OK = "ok"
    WARNING = "warning"
    CRITICAL = "critical"


_RANK = {Severity.OK: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}


@dataclass(frozen=True)
class HealthCheck:
    """One check: its ``name`` (PostHog's where it has one), ``severity``, a one-sentence ``reason`` and the number
    behind it (``value``: a p-value, a count; NaN when none)."""

    name: str
    severity: Severity
    reason: str
    value: float = math.nan

    @property
    def line(self) -> str:
        """``"[critical] sample_ratio_mismatch: <reason>"``."""
        return f"[{self.severity.value}] {self.name}: {self.reason}"


@dataclass(frozen=True)
class Health:
    """Every check of one experiment, worst first in :meth:`to_frame` and :meth:`lines`."""

    checks: tuple[HealthCheck, ...] = ()

    @property
    def severity(self) -> Severity:
        """The worst severity (``ok`` without checks)."""
        return max((c.severity for c in self.checks), key=_RANK.__getitem__, default=Severity.OK)

    @property
    def problems(self) -> tuple[HealthCheck, ...]:
        """The checks that are not ``ok``, worst first."""
        return tuple(c for c in self._ordered() if c.severity is not Severity.OK)

    def get(self, name: str) -> HealthCheck | None:
        """The check named ``name``, or None."""
        return next((c for c in self.checks if c.name == name), None)

    def _ordered(self) -> list[HealthCheck]:
        return sorted(self.checks, key=lambda c: -_RANK[c.severity])

    def lines(self) -> list[str]:
        """One line per check, worst first."""
        return [c.line for c in self._ordered()]

    def summary(self) -> str:
        """One line: every check by name, the problems with their reasons first.

        >>> Health((HealthCheck("flag_state", Severity.OK, "active."),
        ...         HealthCheck("no_exposures", Severity.OK, "2 arms exposed."))).summary()
        'Health: ok (2 checks: flag_state, no_exposures).'
        >>> Health((HealthCheck("flag_state", Severity.OK, "active."),
        ...         HealthCheck("no_exposures", Severity.CRITICAL, "nobody exposed."))).summary()
        'Health: critical. [critical] no_exposures: nobody exposed. Also checked, ok: flag_state.'
        """
        problems = self.problems
        fine = ", ".join(c.name for c in self.checks if c.severity is Severity.OK)
        if not problems:
            return f"Health: ok ({len(self.checks)} checks: {fine})." if fine else "Health: ok (no checks)."
        also = f" Also checked, ok: {fine}." if fine else ""
        return f"Health: {self.severity.value}. " + " ".join(c.line for c in problems) + also

    def to_frame(self) -> pd.DataFrame:
        """``name, severity, reason, value``, worst first."""
        rows = [{"name": c.name, "severity": c.severity.value, "reason": c.reason, "value": c.value}
                for c in self._ordered()]  # fmt: skip
        df = pd.DataFrame(rows, columns=["name", "severity", "reason", "value"])
        return df.astype({"name": "string", "severity": "string", "reason": "string", "value": "float64"})

    def _repr_html_(self) -> str:
        colours = {Severity.OK: "#1a7f37", Severity.WARNING: "#9a6700", Severity.CRITICAL: "#cf222e"}
        items = "".join(f'<li><span style="color:{colours[c.severity]}">{c.severity.value}</span> '
                        f"<code>{html.escape(c.name)}</code>: {html.escape(c.reason)}</li>"
                        for c in self._ordered())  # fmt: skip
        return f'<div style="margin:4px 0"><b>Health checks</b><ul style="margin:2px 0">{items}</ul></div>'


def srm_check(
    observed: Mapping[str, float],
    planned: Mapping[str, float] | None = None,
    *,
    threshold: float = SRM_THRESHOLD,
    counted: str = "Exposures",
) -> HealthCheck:
    """``sample_ratio_mismatch``: the χ² test of every arm's units against the planned shares (equal when None or
    when they do not name exactly the arms observed); critical below ``threshold``.

    >>> srm_check({"control": 4520, "test": 4480, "holdout-1": 1000},
    ...           {"control": 0.45, "test": 0.45, "holdout-1": 0.1}).severity.value
    'ok'
    """
    arms = {k: float(v) for k, v in observed.items()}
    if len(arms) < 2 or sum(arms.values()) <= 0:
        return HealthCheck("sample_ratio_mismatch", Severity.OK, "fewer than two arms with units: nothing to check.")
    shares = dict(planned) if planned and set(planned) == set(arms) and sum(planned.values()) > 0 else None
    try:
        result = srm(arms, shares, threshold=threshold)
    except StatsError as exc:
        return HealthCheck("sample_ratio_mismatch", Severity.WARNING, f"the split could not be checked ({exc}).")
    severity = Severity.CRITICAL if result.mismatch else Severity.OK
    reason = result.summary("sentence", counted=counted)
    if severity is Severity.CRITICAL:
        reason += " The arms are not comparable until the cause is found."
    return HealthCheck("sample_ratio_mismatch", severity, reason, result.p_value)


def bias_risk(covariates: Mapping[str, tuple[float, float, float]], control: str) -> HealthCheck:
    """``bias_risk``: the pre-exposure covariate's balance, each variant's mean against ``control``'s by Welch's
    t-test (Holm across variants); ``covariates`` maps each arm to (n, Σx, Σx²).

    >>> bias_risk({"control": (1000, 37360, 2_800_000), "test": (1000, 38820, 3_000_000)}, "control").name
    'bias_risk'
    """
    if control not in covariates or len(covariates) < 2:
        return HealthCheck("bias_risk", Severity.OK, "no pre-exposure covariate to check.")
    n_c, s_c, ss_c = (float(v) for v in covariates[control])
    tests: list[tuple[str, float, float, float]] = []
    for key, (n, s, ss) in covariates.items():
        if key == control or n < 2 or n_c < 2:
            continue
        mean, mean_c = s / n, s_c / n_c
        var, var_c = max(ss - s * s / n, 0.0) / (n - 1), max(ss_c - s_c * s_c / n_c, 0.0) / (n_c - 1)
        se2 = var / n + var_c / n_c
        if not se2 > 0:
            continue
        nu = se2 * se2 / ((var / n) ** 2 / (n - 1) + (var_c / n_c) ** 2 / (n_c - 1))
        t = (mean - mean_c) / math.sqrt(se2)
        tests.append((key, mean, mean_c, float(2.0 * special.stdtr(nu, -abs(t)))))
    if not tests:
        return HealthCheck("bias_risk", Severity.OK, "the pre-exposure covariate has no spread to check.")
    adjusted = adjust_pvalues(np.array([p for *_, p in tests]), "holm")
    worst = int(np.argmin(adjusted))
    key, mean, mean_c, _ = tests[worst]
    p = float(adjusted[worst])
    said = f"before exposure {key} averaged {mean:.4g} against {control}'s {mean_c:.4g} (Welch p = {p:.2g}"
    said += ", Holm-adjusted)" if len(tests) > 1 else ")"
    if p < BIAS_CRITICAL:
        return HealthCheck("bias_risk", Severity.CRITICAL, f"{said}: randomisation should not produce this; "
                           "check who is exposed when.", p)  # fmt: skip
    if p < BIAS_WARNING:
        return HealthCheck("bias_risk", Severity.WARNING, f"{said}: a chance imbalance that CUPED corrects; the "
                           "unadjusted lift carries it.", p)  # fmt: skip
    return HealthCheck("bias_risk", Severity.OK, f"{said}: balanced.", p)


def planned_shares(split: Mapping[str, float], holdout: tuple[str, float] | None = None) -> dict[str, float]:
    """Each arm's planned share of all units: the flag's split scaled by 1 − h, and the holdout's h.

    >>> planned_shares({"control": 0.5, "test": 0.5}, ("holdout-3", 0.2))
    {'control': 0.4, 'test': 0.4, 'holdout-3': 0.2}
    """
    total = sum(split.values())
    shares = {k: v / total for k, v in split.items()} if total > 0 else dict(split)
    if holdout is None:
        return shares
    key, share = holdout
    out = {k: v * (1.0 - share) for k, v in shares.items()}
    out[key] = share
    return out
