"""The whole-array replay of ordered funnels against the fold and a Python restatement, person by person.

``vector_expr`` recomputes the fold's state for all of a person's events at once; where it is used (ordered
funnels without exclusions or a step attribution) it must give the same furthest step and the same step times as
``fold_expr`` and as ``oracle.funnel_replay`` for any sorted events: ties in time, events matching several steps,
events exactly on the window's edge, repeated entries, steps out of order. Random persons (seeded) are replayed
by both SQL forms in one query on the service's engine and by Python.
"""

from __future__ import annotations

import random

import pytest

from hoglab.translate.funnel_replay import fold_expr, packed_event_key, unpacked, vector_expr

from .oracle import funnel_replay

pytestmark = pytest.mark.xdist_group("insights")


def _person(rng: random.Random, n: int, window: int) -> list[tuple[int, set[int], set[int], str]]:
    """Events sorted as the runner sorts them (time, first step, step bits); times on a coarse grid for ties."""
    events = []
    for _ in range(rng.randint(1, 14)):
        steps = {rng.randrange(n)}
        if rng.random() < 0.2:
            steps.add(rng.randrange(n))  # one event matching two steps
        t = rng.choice([0, 1, 2, window // 2, window, window + 1, 2 * window]) + rng.randrange(3) * window
        events.append((t - 3 * window if rng.random() < 0.1 else t, steps, set(), ""))  # some before 1970
    return sorted(events, key=lambda e: (e[0], min(e[1]), sum(1 << s for s in e[1])))


def _sql_rows(engine, persons, n: int, window: int, replay) -> list[tuple[int, list[int]]]:
    rows = []
    for i, events in enumerate(persons):
        ts = ", ".join(str(e[0]) for e in events)
        m = ", ".join(str(sum(1 << s for s in e[1])) for e in events)
        rows.append(f"({i}, [{ts}], [{m}])")
    source = (f"(SELECT p.1 AS id, CAST(p.2, 'Array(Int64)') AS ts, CAST(p.3, 'Array(Int64)') AS m "
              f"FROM (SELECT arrayJoin([{', '.join(rows)}]) AS p))")  # fmt: skip
    sql = f"SELECT * FROM ({replay.select(['id'], ['ts', 'm'], source)}) ORDER BY id"
    table = engine.execute(sql, settings={"max_query_size": 50_000_000})
    return [(int(r["step_reached"]), [int(t) for t in r["times"]]) for r in table.to_pylist()]


@pytest.mark.parametrize("n", [2, 3, 5, 9])
@pytest.mark.parametrize("seed", [1, 2])
def test_vector_replay_equals_the_fold_and_python(hoglab_service, n, seed):
    rng = random.Random(seed * 100 + n)
    window = 10
    persons = [_person(rng, n, window) for _ in range(400)]
    engine = hoglab_service.state.engine
    vector = _sql_rows(engine, persons, n, window, vector_expr(n, window))
    fold = _sql_rows(
        engine, persons, n, window, fold_expr(n, window, strict=False, attribution_step=None, exclusions=False)
    )
    python = [funnel_replay(events, n, window, strict=False) for events in persons]
    for events, v, f, (reached, times) in zip(persons, vector, fold, python, strict=True):
        assert v == (reached, [int(t) for t in times]), events
        if min(e[0] for e in events) > 0:  # the fold reads times <= 0 as "no attempt"; the vector form does not
            assert f == v, events
    assert set(range(-1, min(n, 4))) <= {v[0] for v in vector}, "the outcomes that matter occur"


def test_packed_keys_sort_like_the_replay_and_unpack(hoglab_service):
    """Time first, then the lowest step, then the step and exclusion bits; any time from 1901 to 2299 survives."""
    rows = [(-2_177_452_800_000_000, 0, 1, 0), (10_413_792_000_000_000, 2, 4, 3), (5, 1, 6, 0), (5, 0, 3, 0),
            (5, 99, 0, 5), (4, 3, 8, 0)]  # fmt: skip
    values = " UNION ALL ".join(
        f"SELECT toInt64({t}) AS ts0, toInt64({low}) AS lowest, toInt64({m}) AS m0, toInt64({x}) AS x0"
        for t, low, m, x in rows
    )
    arrays = unpacked("ks")
    sql = (f"SELECT {arrays['ts']} AS ts, {arrays['m']} AS m, {arrays['x']} AS x FROM (SELECT arraySort(groupArray("
           f"{packed_event_key('ts0', 'lowest', 'm0', 'x0')})) AS ks FROM ({values}))")  # fmt: skip
    got = hoglab_service.state.engine.execute(sql).to_pylist()[0]
    expected = sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3]))
    assert got == {"ts": [r[0] for r in expected], "m": [r[2] for r in expected], "x": [r[3] for r in expected]}
