"""Helpers of the notebook tests: known events (with names that would break SQL if pasted into it) and the
same events as pandas frames, from which every expected number is computed; a transport that scripts some of
PostHog Cloud's answers and sends the rest to the real service (``PartlyRemote``, ``project_client``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pandas as pd

from hoglab.client import Client


@dataclass
class Demo:
    """The demo's experiment seeded into a project of the session's service (``DEMO_USERS`` users), a client
    on it, and the generated events as pandas (``props`` parsed), from which expected numbers are computed."""

    client: Client
    experiment_id: int
    events: pd.DataFrame


DEMO_USERS = 7000  # a third of the demo's size: the effect is still significant, seeding takes ~2 s


@dataclass
class EventsProject:
    """Two projects on the session's real service, ``a`` and ``b``, with known events, a key reaching both, and
    the same events as pandas frames (expected numbers come from these frames, never through the service)."""

    url: str
    key: str
    a: int
    b: int
    a_frame: pd.DataFrame
    b_frame: pd.DataFrame

    def client(self, project: int | None = None, **options: Any) -> Client:
        return Client(self.url, self.key, self.a if project is None else project, progress=False, **options)


# Event names that would break SQL if they were pasted into it.
TRICKY_EVENTS = ("$pageview", "signup", "x' OR 1=1 --", "it's {odd}")
START = datetime(2025, 3, 1, tzinfo=UTC)


def make_events(n: int, *, offset: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "event": TRICKY_EVENTS[(i + offset) % len(TRICKY_EVENTS)],
            "distinct_id": f"u{(i * 7 + offset) % 11}",
            "properties": {"n": i, "plan": ("free", "pro")[i % 2]},
            "timestamp": (START + timedelta(hours=5 * i + offset)).isoformat().replace("+00:00", "Z"),
        }
        for i in range(n)
    ]


def events_frame(events: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "event": [e["event"] for e in events],
            "distinct_id": [e["distinct_id"] for e in events],
            "timestamp": pd.to_datetime([e["timestamp"] for e in events], utc=True),
            "n": [e["properties"]["n"] for e in events],
            "plan": [e["properties"]["plan"] for e in events],
        }
    )


def drawn_on_the_edge(png: bytes, border: int = 2) -> int:
    """How many pixels of the image's outermost ``border`` rows and columns are drawn (not white, not
    transparent): anything there was cut by the image's edge. 0 for a figure shown whole."""
    import io

    import matplotlib.image as mpimg
    import numpy as np

    pixels = mpimg.imread(io.BytesIO(png), format="png")
    if pixels.shape[-1] == 3:
        pixels = np.concatenate([pixels, np.ones((*pixels.shape[:2], 1))], axis=-1)
    edges = np.concatenate([pixels[:border].reshape(-1, 4), pixels[-border:].reshape(-1, 4),
                            pixels[:, :border].reshape(-1, 4), pixels[:, -border:].reshape(-1, 4)])  # fmt: skip
    return int(((edges[:, :3] < 0.98).any(axis=1) & (edges[:, 3] > 0)).sum())


class PartlyRemote(httpx.BaseTransport):
    """Answers the requests ``remote_answer`` scripts as a REMOTE PostHog Cloud would (the one thing mocked); every
    other request goes to the session's real hoglab service."""

    def __init__(self) -> None:
        self.real = httpx.HTTPTransport()

    def remote_answer(self, request: httpx.Request) -> httpx.Response | None:
        """The scripted answer to ``request``, or None to send it to the real service."""
        raise NotImplementedError

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.remote_answer(request)
        return answer if answer is not None else self.real.handle_request(request)

    def close(self) -> None:
        self.real.close()


def project_client(make_project: Callable[..., Any], transport: httpx.BaseTransport) -> Client:
    """A client of a fresh project on the real service, through ``transport`` (no retries, no progress bars)."""
    project = make_project()
    return Client(str(project.http.base_url).rstrip("/"), project.key, project.id, transport=transport, max_retries=0,
                  progress=False)  # fmt: skip
