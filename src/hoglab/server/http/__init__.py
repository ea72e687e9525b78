"""The service's routers. ``app.py`` mounts every router of ``ROUTERS``; a new one is a line here.

Routers are :class:`SlashRouter` (every path with and without the trailing slash) and use the dependencies of
``hoglab.server.http.auth`` (``require_scope``) and ``hoglab.server.http.ratelimit`` (``query_rate_limited``). OpenAPI
operation ids are the endpoint functions' names, so keep those unique across routers. A route that reads its
JSON body itself documents it with ``bodies.json_body_openapi(Model)``.
"""

from __future__ import annotations

import importlib

from fastapi import APIRouter

from .routing import SlashRouter

__all__ = ["ROUTER_MODULES", "SlashRouter", "load_routers"]

# Modules of this package exposing ``router``, in mounting order.
ROUTER_MODULES = (
    "projects", "experiments", "experiment_metrics", "experiment_holdouts", "experiment_saved_metrics", "query",
    "capture", "flags", "personal_api_keys", "ingestion_warnings", "actions", "groups", "identity",
)  # fmt: skip


def load_routers() -> list[APIRouter]:
    """The ``router`` of each module of ``ROUTER_MODULES``."""
    return [importlib.import_module(f"{__name__}.{name}").router for name in ROUTER_MODULES]
