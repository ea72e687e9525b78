"""hoglab: product analytics and A/B-experiment analysis from Python notebooks.

The public API, loaded on first use so ``import hoglab`` stays fast (no pandas, no httpx, never the server)::

    import hoglab
    client = hoglab.Client()                       # HOGLAB_HOST / HOGLAB_API_KEY / HOGLAB_PROJECT_ID
    df = client.hogql("select event, count() from events group by event")
    trend = client.query(hoglab.trends("$pageview", math="dau", interval="week"))
    steps = client.query(hoglab.funnel(["$pageview", "signup", "purchase"], window="14d"))
    cohorts = client.query(hoglab.retention("signup", returning="$pageview", period="week"))
    result = client.experiments.results(1)         # result.to_frame(), result.verdict
    hoglab.pick_experiment()                       # a widget: choose an experiment, see its results
    hoglab.experiment_report(1).write("out/")      # the whole analysis: text, figures, one HTML page
    hoglab.pull("https://eu.posthog.com", 2, data_dir="mirror/")   # a local, uncapped copy of a project

In IPython or Jupyter, ``%load_ext hoglab`` adds the ``%%hogql`` cell magic (see ``docs/notebook.md``).

Submodules: :mod:`hoglab.schema` (the request/answer models), :mod:`hoglab.frames` (answers to DataFrames),
:mod:`hoglab.queries` (builders), :mod:`hoglab.errors` (the exception hierarchy), :mod:`hoglab.client`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:  # THE list of exports: type checkers read it, and lazy_exports reads it at run time
    from .client import (
        Client as Client,
        ExperimentResult as ExperimentResult,
        MetricExperimentResult as MetricExperimentResult,
        QueryJob as QueryJob,
        RetryPolicy as RetryPolicy,
        by_variant as by_variant,
        connect as connect,
        default_client as default_client,
        read_hogql as read_hogql,
    )
    from .errors import (
        AnswerTimeout as AnswerTimeout,
        APIError as APIError,
        AuthenticationError as AuthenticationError,
        ConfigurationError as ConfigurationError,
        HoglabError as HoglabError,
        InvalidArgument as InvalidArgument,
        InvalidArgumentType as InvalidArgumentType,
        NotFound as NotFound,
        PermissionDenied as PermissionDenied,
        QueryError as QueryError,
        QueryTimeout as QueryTimeout,
        QueryWarning as QueryWarning,
        RateLimited as RateLimited,
        RedirectRefused as RedirectRefused,
        RemoteAnswerError as RemoteAnswerError,
        ServerError as ServerError,
        TransportError as TransportError,
        ValidationError as ValidationError,
    )
    from .frames import (
        to_arrow as to_arrow,
        to_polars as to_polars,
    )
    from .notebook import (
        ExperimentPicker as ExperimentPicker,
        ExperimentReport as ExperimentReport,
        experiment_report as experiment_report,
        load_ipython_extension as load_ipython_extension,
        pick_experiment as pick_experiment,
        plot_cumulative_effect as plot_cumulative_effect,
        plot_experiment as plot_experiment,
        plot_exposures as plot_exposures,
        plot_funnel as plot_funnel,
        plot_funnel_correlation as plot_funnel_correlation,
        plot_lifecycle as plot_lifecycle,
        plot_metric_effects as plot_metric_effects,
        plot_novelty as plot_novelty,
        plot_paths as plot_paths,
        plot_retention as plot_retention,
        plot_retention_curve as plot_retention_curve,
        plot_srm as plot_srm,
        plot_stickiness as plot_stickiness,
        plot_trends as plot_trends,
        unload_ipython_extension as unload_ipython_extension,
    )
    from .pulling import PullReport as PullReport, pull as pull
    from .queries import (
        actors as actors,
        events as events,
        experiment_query as experiment_query,
        exposure_query as exposure_query,
        funnel as funnel,
        funnel_correlation as funnel_correlation,
        funnel_metric as funnel_metric,
        groups as groups,
        lifecycle as lifecycle,
        mean_metric as mean_metric,
        paths as paths,
        ratio_metric as ratio_metric,
        retention as retention,
        retention_metric as retention_metric,
        series as series,
        stats_config as stats_config,
        stickiness as stickiness,
        trends as trends,
    )

__getattr__, __dir__, _exported = lazy_exports(__name__, __file__, public_home="hoglab")
__all__ = sorted([*_exported, "__version__"])
