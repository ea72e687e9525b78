"""The set-up of the SDK end-to-end tests: a project fed once by a tour's ``feed_*`` function, then read back.

``feed_sdk_project(name, feed)`` (module scope) makes a project on the session's service with its own ``*`` key
and a :class:`~hoglab.client.Client`, runs ``feed(client, key)`` (it plays the visits through the ``posthog`` SDK
and answers what it made, with its ``experiment``), fetches the experiment's results and reads the stored events
back over HogQL (``events_hogql``): the independent input of each test's restatement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pytest

from hoglab.client import Client, MetricExperimentResult

EVENTS_HOGQL = (
    "select event, person_id, timestamp, toFloat(properties.price) as price, properties.$feature_flag as flag, "
    "properties.$feature_flag_response as response from events order by timestamp"
)
"""The columns the restatements read, one row an event, oldest first."""

Fed = tuple[Client, Any, MetricExperimentResult, pd.DataFrame]
"""The client, what the feed made, the experiment's results, the stored events."""


@pytest.fixture(scope="module")
def feed_sdk_project(hoglab_service: Any) -> Iterator[Callable[..., Fed]]:
    clients: list[Client] = []

    def feed_project(name: str, feed: Callable[[Client, str], Any], *, events_hogql: str = EVENTS_HOGQL) -> Fed:
        store = hoglab_service.state.store
        record = store.projects.create(f"{name}, fed by the posthog SDK")
        _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label=f"{name} sdk test")
        client = Client(hoglab_service.url, key, record.id, progress=False)
        clients.append(client)
        demo = feed(client, key)
        result = client.experiments.results(demo.experiment.id)
        assert isinstance(result, MetricExperimentResult)
        return client, demo, result, client.hogql(events_hogql, all_rows=True)

    yield feed_project
    for client in clients:
        client.close()
