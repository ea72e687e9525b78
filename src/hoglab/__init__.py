"""hoglab: product analytics and A/B-experiment analysis from Python notebooks.

The public API, loaded on first use so ``import hoglab`` stays fast (no pandas, no httpx, never the server)::

    import hoglab
    client = hoglab.Client()                       # HOGLAB_HOST / HOGLAB_API_KEY / HOGLAB_PROJECT_ID
    df = client.hogql("select event, count() from events group by event")
    trend = client.query(hoglab.trends("$pageview", math="dau", interval="week"))
    steps = client.query(hoglab.funnel(["$pageview", "signup", "purchase"], window="14d"))
    result = client.experiments.results(1)         # result.to_frame(), result.verdict
    hoglab.pick_experiment()                       # a widget: choose an experiment, see its results
    hoglab.experiment_report(1).write("out/")      # the whole analysis: text, figures, one HTML page

In IPython or Jupyter, ``%load_ext hoglab`` adds the ``%%hogql`` cell magic (see ``docs/notebook.md``).

Submodules: :mod:`hoglab.schema` (the request/answer models), :mod:`hoglab.frames` (answers to DataFrames),
:mod:`hoglab.queries` (builders), :mod:`hoglab.errors` (the exception hierarchy), :mod:`hoglab.client`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> module that defines it: one line each, and a name in __all__. ``%load_ext hoglab`` finds
# load_ipython_extension through this map, so loading the extension imports only hoglab.notebook._magic.
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        [
            "APIError",
            "AuthenticationError",
            "ConfigurationError",
            "HoglabError",
            "InvalidArgument",
            "InvalidArgumentType",
            "NotFound",
            "PermissionDenied",
            "QueryError",
            "QueryTimeout",
            "RateLimited",
            "ServerError",
            "TransportError",
            "ValidationError",
        ],
        "hoglab.errors",
    ),
    **dict.fromkeys(
        ["Client", "ExperimentResult", "QueryJob", "RetryPolicy", "connect", "default_client", "read_hogql"],
        "hoglab.client",
    ),
    **dict.fromkeys(["actors", "events", "funnel", "series", "trends"], "hoglab.queries"),
    **dict.fromkeys(["to_arrow", "to_polars"], "hoglab.frames"),
    **dict.fromkeys(
        [
            "ExperimentPicker",
            "ExperimentReport",
            "experiment_report",
            "load_ipython_extension",
            "pick_experiment",
            "plot_cumulative_effect",
            "plot_experiment",
            "plot_funnel",
            "plot_srm",
            "plot_trends",
            "unload_ipython_extension",
        ],
        "hoglab.notebook",
    ),
}

__all__ = [
    "APIError",
    "AuthenticationError",
    "Client",
    "ConfigurationError",
    "ExperimentPicker",
    "ExperimentReport",
    "ExperimentResult",
    "HoglabError",
    "InvalidArgument",
    "InvalidArgumentType",
    "NotFound",
    "PermissionDenied",
    "QueryError",
    "QueryJob",
    "QueryTimeout",
    "RateLimited",
    "RetryPolicy",
    "ServerError",
    "TransportError",
    "ValidationError",
    "__version__",
    "actors",
    "connect",
    "default_client",
    "events",
    "experiment_report",
    "funnel",
    "load_ipython_extension",
    "pick_experiment",
    "plot_cumulative_effect",
    "plot_experiment",
    "plot_funnel",
    "plot_srm",
    "plot_trends",
    "read_hogql",
    "series",
    "to_arrow",
    "to_polars",
    "trends",
    "unload_ipython_extension",
]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load lazily through __getattr__
    from .client import Client, ExperimentResult, QueryJob, RetryPolicy, connect, default_client, read_hogql
    from .errors import (
        APIError,
        AuthenticationError,
        ConfigurationError,
        HoglabError,
        InvalidArgument,
        InvalidArgumentType,
        NotFound,
        PermissionDenied,
        QueryError,
        QueryTimeout,
        RateLimited,
        ServerError,
        TransportError,
        ValidationError,
    )
    from .frames import to_arrow, to_polars
    from .notebook import (
        ExperimentPicker,
        ExperimentReport,
        experiment_report,
        load_ipython_extension,
        pick_experiment,
        plot_cumulative_effect,
        plot_experiment,
        plot_funnel,
        plot_srm,
        plot_trends,
        unload_ipython_extension,
    )
    from .queries import actors, events, funnel, series, trends


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'hoglab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    # Show the public home in reprs, tracebacks and docs (hoglab.Client, not hoglab.client._client.Client).
    if getattr(value, "__module__", "").startswith("hoglab.") and hasattr(value, "__qualname__"):
        value.__module__ = "hoglab"
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
