"""The service's routers. ``app.py`` mounts every router of ``ROUTERS``; a new one is a line here.

Routers are :class:`SlashRouter` (every path with and without the trailing slash) and use the dependencies of
``hoglab.server.http.auth`` (``require_scope``) and ``hoglab.server.http.ratelimit`` (``query_rate_limited``). OpenAPI
operation ids are the endpoint functions' names, so keep those unique across routers. A route that reads its
JSON body itself documents it with ``common.json_body_openapi(Model)``.
"""

from __future__ import annotations

import importlib

from fastapi import APIRouter

from .routing import SlashRouter

__all__ = ["ROUTER_MODULES", "SlashRouter", "load_routers"]

# Modules of this package exposing ``router``, in mounting order. Modules not written yet are skipped, so the
# engine, query and flags work can land in any order.
ROUTER_MODULES = ("projects", "experiments", "query", "capture", "flags")


def load_routers() -> list[APIRouter]:
    """The ``router`` of each module of ``ROUTER_MODULES`` that exists."""
    routers: list[APIRouter] = []
    for name in ROUTER_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        routers.append(module.router)
    return routers
