"""The public surface: curated, sorted, importable without notebook dependencies."""

from __future__ import annotations

import subprocess
import sys

import pytest

import hoglab.stats as hs
from hoglab.stats import posthog


def _sorted(names: list[str]) -> bool:
    # A plain sort (what hoglab._lazy gives a lazy package), or ruff's RUF022 order: CONSTANTS, Classes, functions.
    def isort_key(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    return names in (sorted(names), sorted(names, key=isort_key))


def test_all_is_sorted_and_complete() -> None:
    assert _sorted(hs.__all__)
    public = sorted(name for name in dir(hs) if not name.startswith("_"))
    assert public == hs.__all__


def test_posthog_module_all_is_sorted_and_importable() -> None:
    assert _sorted(posthog.__all__)
    for name in posthog.__all__:
        assert getattr(posthog, name) is not None
    # The main PostHog names are re-exported at package level.
    shared = (
        "funnel_verdict",
        "trend_verdict",
        "FunnelVariant",
        "TrendVariant",
        "posthog_monte_carlo_funnel",
    )
    for name in shared:
        assert getattr(hs, name) is getattr(posthog, name)


def test_exported_classes_show_the_public_module() -> None:
    assert hs.Proportion.__module__ == "hoglab.stats"
    assert hs.compare.__module__ == "hoglab.stats"
    assert repr(hs.Proportion(10, 1)) == "Proportion(n=10, successes=1)"


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (hs.StatsInputError, ValueError),
        (hs.PostHogStatsError, ValueError),
        (hs.StatsComputationError, ArithmeticError),
    ],
)
def test_errors_inherit_the_builtin_they_specialise(error: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(error, builtin)
    assert issubclass(error, hs.StatsError)


def test_import_is_lazy_until_a_statistic_is_used() -> None:
    # The service reaches hoglab.stats.posthog at its start; SciPy and pandas wait for the first computation.
    code = (
        "import sys\n"
        "import hoglab.stats, hoglab.stats.posthog\n"
        "from hoglab.stats.posthog import TeamDefaults, resolve_cuped\n"
        "assert not [m for m in ('scipy', 'pandas') if m in sys.modules]\n"
        "from hoglab.stats import compare\n"
        "assert 'scipy' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_import_needs_no_plotting_or_ipython() -> None:
    code = (
        "import sys\n"
        "import hoglab.stats, hoglab.stats.posthog\n"
        "heavy = ('matplotlib', 'IPython', 'ipywidgets', 'httpx', 'statsmodels')\n"
        "bad = [m for m in heavy if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert run.stdout.strip() == ""
