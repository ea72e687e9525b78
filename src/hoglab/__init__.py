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
    from ._pull import PullReport as PullReport
    from ._pull import pull as pull
    from .client import (
        Client as Client,
    )
    from .client import (
        ExperimentResult as ExperimentResult,
    )
    from .client import (
        MetricExperimentResult as MetricExperimentResult,
    )
    from .client import (
        QueryJob as QueryJob,
    )
    from .client import (
        RetryPolicy as RetryPolicy,
    )
    from .client import (
        connect as connect,
    )
    from .client import (
        default_client as default_client,
    )
    from .client import (
        read_hogql as read_hogql,
    )
    from .errors import (
        APIError as APIError,
    )
    from .errors import (
        AuthenticationError as AuthenticationError,
    )
    from .errors import (
        ConfigurationError as ConfigurationError,
    )
    from .errors import (
        HoglabError as HoglabError,
    )
    from .errors import (
        InvalidArgument as InvalidArgument,
    )
    from .errors import (
        InvalidArgumentType as InvalidArgumentType,
    )
    from .errors import (
        NotFound as NotFound,
    )
    from .errors import (
        PermissionDenied as PermissionDenied,
    )
    from .errors import (
        QueryError as QueryError,
    )
    from .errors import (
        QueryTimeout as QueryTimeout,
    )
    from .errors import (
        RateLimited as RateLimited,
    )
    from .errors import (
        ServerError as ServerError,
    )
    from .errors import (
        TransportError as TransportError,
    )
    from .errors import (
        ValidationError as ValidationError,
    )
    from .frames import (
        to_arrow as to_arrow,
    )
    from .frames import (
        to_polars as to_polars,
    )
    from .notebook import (
        ExperimentPicker as ExperimentPicker,
    )
    from .notebook import (
        ExperimentReport as ExperimentReport,
    )
    from .notebook import (
        experiment_report as experiment_report,
    )
    from .notebook import (
        load_ipython_extension as load_ipython_extension,
    )
    from .notebook import (
        pick_experiment as pick_experiment,
    )
    from .notebook import (
        plot_cumulative_effect as plot_cumulative_effect,
    )
    from .notebook import (
        plot_experiment as plot_experiment,
    )
    from .notebook import (
        plot_exposures as plot_exposures,
    )
    from .notebook import (
        plot_funnel as plot_funnel,
    )
    from .notebook import (
        plot_lifecycle as plot_lifecycle,
    )
    from .notebook import (
        plot_metric_effects as plot_metric_effects,
    )
    from .notebook import (
        plot_paths as plot_paths,
    )
    from .notebook import (
        plot_retention as plot_retention,
    )
    from .notebook import (
        plot_retention_curve as plot_retention_curve,
    )
    from .notebook import (
        plot_srm as plot_srm,
    )
    from .notebook import (
        plot_stickiness as plot_stickiness,
    )
    from .notebook import (
        plot_trends as plot_trends,
    )
    from .notebook import (
        unload_ipython_extension as unload_ipython_extension,
    )
    from .queries import (
        actors as actors,
    )
    from .queries import (
        events as events,
    )
    from .queries import (
        funnel as funnel,
    )
    from .queries import (
        funnel_metric as funnel_metric,
    )
    from .queries import (
        lifecycle as lifecycle,
    )
    from .queries import (
        mean_metric as mean_metric,
    )
    from .queries import (
        paths as paths,
    )
    from .queries import (
        ratio_metric as ratio_metric,
    )
    from .queries import (
        retention as retention,
    )
    from .queries import (
        series as series,
    )
    from .queries import (
        stickiness as stickiness,
    )
    from .queries import (
        trends as trends,
    )

__getattr__, __dir__, _exported = lazy_exports(__name__, __file__, public_home="hoglab")
__all__ = sorted([*_exported, "__version__"])
