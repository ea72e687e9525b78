"""The per-query memory limit is the service's setting, and GROUP BY / ORDER BY spill to disk before reaching it:
a big aggregation under a small limit answers (slower) instead of failing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from querytesting import new_project

from hoglab.local import LocalService, start_local_service
from hoglab.server.engine import MemoryLimitExceeded
from hoglab.server.engine.settings import spill_settings

LIMIT = 100 * 1024**2
# 3,000,000 distinct keys: the hash table of this GROUP BY alone outgrows LIMIT.
WIDE_GROUP_BY = (
    "select k, count() as c from (select number % 3000000 as k from numbers(6000000)) "
    "group by k order by c desc, k limit 3"
)


@pytest.fixture(scope="module")
def small_memory(hoglab_service: LocalService) -> Iterator[LocalService]:
    overrides = {"max_memory_usage": LIMIT, "max_execution_time": 120, "query_rate_limit": "1000/hour"}
    with start_local_service(hoglab_service.data_dir, config_overrides=overrides) as service:
        yield service


def test_a_group_by_larger_than_the_limit_spills_and_answers(small_memory: LocalService) -> None:
    project = new_project(small_memory, "spill")
    try:
        response = project.query(WIDE_GROUP_BY, refresh="force_blocking")
        assert response.status_code == 200, response.text
        assert response.json()["results"] == [[0, 2], [1, 2], [2, 2]]
    finally:
        project.close()


def test_without_spilling_the_same_query_exceeds_the_limit(small_memory: LocalService) -> None:
    """The control: the limit is real, and it is the spill settings that let the query above through."""
    engine = small_memory.state.engine
    assert engine is not None
    no_spill = {"max_memory_usage": LIMIT, "max_bytes_before_external_group_by": 0, "max_bytes_before_external_sort": 0}
    with pytest.raises(MemoryLimitExceeded):
        engine.execute(WIDE_GROUP_BY, settings=no_spill)
    spilled = engine.execute(WIDE_GROUP_BY, settings={"max_memory_usage": LIMIT, **spill_settings(LIMIT)})
    assert spilled.column("c").to_pylist() == [2, 2, 2]
