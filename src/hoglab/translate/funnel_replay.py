"""The per-person replay of a funnel (the rules: ``server/query/runners/funnels_sql.py``), and how its events are
sorted; the funnels runner and experiment funnel metrics both replay with it.

Two forms answer the same (``tests/server/query/runners/test_funnel_vector.py`` checks both against a Python
restatement): :func:`vector_expr`, a handful of whole-array operations per step, for ordered funnels without
exclusions or a step attribution (most funnels; 2-3x cheaper than the fold at 100M events), and :func:`fold_expr`,
one ``arrayFold`` that carries everything else (strict order, exclusions, a breakdown value per step).
:func:`replay_expr` picks. Both read the arrays :func:`packed_event_key` and :func:`unpacked` give.

The fold walks a person's events sorted by time (arrays ``ts`` microseconds, ``m`` step bits, and when needed
``x`` exclusion bits and ``b`` breakdown values) and keeps its state in one flat tuple of Int64 (``_Layout``).
ClickHouse evaluates a fold one array position at a time over a block of persons, running the lambda's
expressions once per position: scalar columns cost far less there than the nested arrays an obvious state
(times per attempt as ``Array(Array(Int64))``) would, about 2-3x less for a 3-step funnel.

>>> replay = fold_expr(2, 10, strict=True, attribution_step=None, exclusions=False)
>>> fold, step_reached, times = replay.layers[0]
>>> fold[0].startswith("arrayFold((s, t, mm) -> "), step_reached, times
(True, ('if(f.4 = 1, -2, f.2 - 1)', 'step_reached'), ('arraySlice([f.3, f.5], 1, f.2)', 'times'))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "Replay",
    "fold_expr",
    "packed_event_key",
    "replay_expr",
    "unordered_expr",
    "unordered_replay",
    "unpacked",
    "vector_expr",
]


class _Layout:
    """Where each value of the replay's state sits in its flat tuple (1-based, for ``s.<i>``).

    ``D`` done, ``M`` furthest step, ``ME`` its entry time, ``MX`` whether it is excluded, ``MT<j>`` the time it
    did step j; per step k: ``E<k>`` the entry time of the attempt at step k, ``X<k>`` whether that attempt is
    excluded (only with exclusions), ``P<k>_<j>`` the time it did step j (2 <= j <= k; step 1 is the entry time).
    """

    def __init__(self, n: int, *, exclusions: bool) -> None:
        names = ["D", "M", "ME", "MX", *(f"MT{j}" for j in range(2, n + 1))]
        names += [f"E{k}" for k in range(1, n + 1)]
        names += [f"X{k}" for k in range(1, n + 1)] if exclusions else []
        names += [f"P{k}_{j}" for k in range(2, n + 1) for j in range(2, k + 1)]
        self.names = names
        self.index = {name: i + 1 for i, name in enumerate(names)}

    def __call__(self, name: str, of: str = "s") -> str:
        return f"{of}.{self.index[name]}"


# Times go into the sort key shifted by this many microseconds (2042 years), so every time from 1901 on is positive.
_TIME_SHIFT = 2_300_000_000_000_000
_BITS = 28  # steps (and exclusion gaps) a mask may hold in the key: a funnel has at most 21 (a metric's exposure + 20)
_MASK = (1 << _BITS) - 1


def packed_event_key(ts: str, lowest: str, m: str, x: str) -> str:
    """One UInt128 per event whose plain sort is the replay's order: time, first step, then step and exclusion bits.

    Sorting one native array is far cheaper than sorting zipped tuples by a lambda (about 4x at 80M events).

    >>> packed_event_key("ts0", "lowest", "m0", "0").startswith("bitOr(bitShiftLeft(toUInt128(ts0 + 2300")
    True
    """
    return (
        f"bitOr(bitShiftLeft(toUInt128({ts} + {_TIME_SHIFT}), 64), bitOr(bitShiftLeft(toUInt128({lowest}), 56), "
        f"bitOr(bitShiftLeft(toUInt128({m}), {_BITS}), toUInt128({x}))))"
    )


def unpacked(keys: str) -> dict[str, str]:
    """The ``ts`` (microseconds), ``m`` and ``x`` arrays of sorted :func:`packed_event_key` values."""
    return {
        "ts": f"arrayMap(k -> toInt64(bitShiftRight(k, 64)) - {_TIME_SHIFT}, {keys})",
        "m": f"arrayMap(k -> toInt64(bitAnd(bitShiftRight(k, {_BITS}), {_MASK})), {keys})",
        "x": f"arrayMap(k -> toInt64(bitAnd(k, {_MASK})), {keys})",
    }


@dataclass(frozen=True)
class Replay:
    """The replay as layers of select items, innermost first, each ``(expression, alias)``; the last layer's
    items end with ``step_reached`` and ``times``.

    Each layer is its own ``SELECT`` over the one before (:meth:`select`), so an item reads the earlier layers'
    results as columns: ClickHouse copies an alias's expression wherever the alias is used in one ``SELECT``,
    and the whole-array replay's steps, each built on the one before, would otherwise grow the query tree
    exponentially (past ClickHouse's 500,000 elements at 8 steps).
    """

    layers: tuple[tuple[tuple[str, str], ...], ...]

    def select(self, keep: Sequence[str], arrays: Sequence[str], source: str) -> str:
        """``SELECT <keep>, step_reached, times`` from ``source`` (a parenthesised query with ``keep`` and the
        ``arrays`` the replay reads) through the layers.

        >>> Replay(((("length(ts)", "n"),), (("n - 1", "step_reached"), ("[]", "times")))).select(["a"], ["ts"], "t")
        'SELECT a, step_reached, times FROM (SELECT a, ts, n, n - 1 AS step_reached, [] AS times FROM (SELECT a, ts, length(ts) AS n FROM t))'
        """  # noqa: E501
        names = [*keep, *arrays]
        sql = source
        for layer in self.layers:
            sql = f"(SELECT {', '.join([*names, *(f'{expr} AS {alias}' for expr, alias in layer)])} FROM {sql})"
            names += [alias for _, alias in layer]
        return f"SELECT {', '.join([*keep, 'step_reached', 'times'])} FROM {sql}"


def replay_expr(n: int, window: int, *, strict: bool, attribution_step: int | None, exclusions: bool) -> Replay:
    """The cheapest replay that answers this funnel: :func:`vector_expr` where it applies, else :func:`fold_expr`."""
    if not strict and attribution_step is None and not exclusions:
        return vector_expr(n, window)
    return fold_expr(n, window, strict=strict, attribution_step=attribution_step, exclusions=exclusions)


def vector_expr(n: int, window: int) -> Replay:
    """An ordered funnel (no exclusions, no step attribution) over ``ts, m`` with whole-array operations.

    The fold's state after each event, computed for all events at once. ``e<k>``: the entry time of the attempt
    at step k after each event, a forward fill (``arrayFill``) of the entries that moved an attempt to step k;
    ``ep<k>``: the same before each event (shifted by one), which is what the fold's rules read, so an event
    matching several steps moves each attempt from the state before it, as the fold does. An event of step k
    moves the attempt at k-1 on when that attempt exists and the event is within its window (``ok<k>``); it makes
    a *new* attempt at k when that entry was not at k already (``new<k>``), and ``cp<k>`` remembers the position
    where the attempt at k (before each event) got there. The furthest step is the highest k with any ``ok<k>``;
    the first attempt to reach it is at ``arrayFirstIndex``, and its step times are read back through ``cp``.
    Times are shifted positive inside (an entry of 0 means "none"). One layer per step (see :class:`Replay`).

    >>> replay = vector_expr(2, 10)
    >>> [[alias for _, alias in layer] for layer in replay.layers]
    [['fz_i', 'fz_t', 'fz_ok1', 'fz_ep1', 'fz_cp1'], ['fz_ok2'], ['fz_m', 'step_reached', 'times']]
    >>> print(replay.layers[-1][-1][0].replace("arrayFirstIndex(x -> x, ", "first("))
    multiIf(fz_m = 2, [ts[fz_cp1[first(fz_ok2)]], ts[first(fz_ok2)]], fz_m = 1, [ts[first(fz_ok1)]], [])
    """

    def before(array: str) -> str:  # each position's value before its event (0 before the first)
        return f"arraySlice(arrayPushFront({array}, 0), 1, length(ts))"

    def carried(array: str) -> str:  # the last non-zero value so far
        return f"arrayFill(x -> x != 0, {array})"

    layers: list[list[tuple[str, str]]] = []
    for k in range(1, n + 1):
        layer: list[tuple[str, str]] = []
        if k == 1:
            layer += [("arrayEnumerate(ts)", "fz_i"), (f"arrayMap(t -> t + {_TIME_SHIFT}, ts)", "fz_t")]
            layer.append(("arrayMap(mm -> bitTest(mm, 0), m)", "fz_ok1"))
            moved = "arrayMap((o, t) -> if(o, t, 0), fz_ok1, fz_t)"
            entering = "fz_t"
        else:
            ok = f"arrayMap((mm, t, p) -> bitTest(mm, {k - 1}) AND p > 0 AND t - p <= {window}, m, fz_t, fz_ep{k - 1})"
            layer.append((ok, f"fz_ok{k}"))
            moved = f"arrayMap((o, p) -> if(o, p, 0), fz_ok{k}, fz_ep{k - 1})"
            entering = f"fz_ep{k - 1}"
        if k < n:  # the last step's attempts hand nothing on: only its first ``ok`` is read
            layer.append((before(carried(moved)), f"fz_ep{k}"))
            new = f"arrayMap((o, e, p, i) -> if(o AND e != p, i, 0), fz_ok{k}, {entering}, fz_ep{k}, fz_i)"
            layer.append((before(carried(new)), f"fz_cp{k}"))
        layers.append(layer)
    reached = "multiIf(" + ", ".join(f"arrayExists(x -> x, fz_ok{k}), {k}" for k in range(n, 0, -1)) + ", 0)"
    chains = []
    for k in range(n, 0, -1):
        position = {k: f"arrayFirstIndex(x -> x, fz_ok{k})"}
        for j in range(k - 1, 0, -1):
            position[j] = f"fz_cp{j}[{position[j + 1]}]"
        chains.append(f"fz_m = {k}, [{', '.join(f'ts[{position[j]}]' for j in range(1, k + 1))}]")
    layers.append([(reached, "fz_m"), ("fz_m - 1", "step_reached"), (f"multiIf({', '.join(chains)}, [])", "times")])
    return Replay(tuple(tuple(layer) for layer in layers))


def fold_expr(n: int, window: int, *, strict: bool, attribution_step: int | None, exclusions: bool) -> Replay:
    """The fold over ``ts, m`` (+ ``x`` with ``exclusions``, + ``b`` with ``attribution_step``, compared to ``pv``).

    ``step_reached``: the furthest step, 0-based (-1: none, -2: excluded); ``times``: that attempt's step times.
    """
    s = _Layout(n, exclusions=exclusions)

    def entry_before(k: int) -> str:  # the entry time an attempt at step k-1 hands on (a new one at step 1)
        return "t" if k == 1 else s(f"E{k - 1}")

    def advances(k: int) -> str:
        parts = [f"bitTest(mm, {k - 1})"]
        if k > 1:
            parts.append(f"{s(f'E{k - 1}')} > 0 AND t - {s(f'E{k - 1}')} <= {window}")
        parts.append(f"{s(f'E{k}')} != {entry_before(k)}")
        if attribution_step is not None and k == attribution_step + 1:
            parts.append("bb = pv")
        return "(" + " AND ".join(parts) + ")"

    def keeps(k: int) -> str:  # an advance from an excluded attempt does not move the attempt on
        return f"({advances(k)} AND {s(f'X{k - 1}')} = 0)" if exclusions and k > 1 else advances(k)

    def excluded_at(i: int) -> str:  # an exclusion event between step i and i+1 of the attempt at step i
        # Exclusions only come from events that match no step (PostHog: an event is steps or exclusions).
        return (
            f"(mm = 0 AND bitTest(xx, {i - 1}) AND {s(f'E{i}')} > 0 AND t - {s(f'E{i}')} <= {window}"
            f" AND {s(f'E{i + 1}')} != {s(f'E{i}')})"
        )

    def cleared(k: int, value: str) -> str:  # strict: an event clears the steps it does not match
        return f"if(bitTest(mm, {k - 1}), {value}, 0)" if strict else value

    # c: the step that becomes the new furthest one (0: none), bound once per event through a one-element arrayMap.
    best = ", ".join(
        f"({advances(k)} AND ({k} > {s('M')} OR ({k} = {s('M')} AND {s('MX')} = 1))), {k}" for k in range(n, 0, -1)
    )
    new = {
        "D": f"{keeps(n)} OR {s(f'E{n}')} > 0",
        "M": f"if(c > 0, c, {s('M')})",
        "ME": "multiIf(c = 1, t, " + "".join(f"c = {k}, {s(f'E{k - 1}')}, " for k in range(2, n + 1)) + f"{s('ME')})",
        "MX": "0",
    }
    if exclusions:
        hit = " OR ".join(f"({excluded_at(i)} AND {s('M')} = {i} AND t - {s('ME')} <= {window})" for i in range(1, n))
        handed_on = "".join(f"c = {k}, {s(f'X{k - 1}')}, " for k in range(2, n + 1))
        new["MX"] = f"multiIf(c = 1, 0, {handed_on}{hit}, 1, {s('MX')})"
    for j in range(2, n + 1):
        moved = [f"c = {j}, t"] + [f"c = {k}, {s(f'P{k - 1}_{j}')}" for k in range(j + 1, n + 1)]
        new[f"MT{j}"] = f"multiIf({', '.join(moved)}, c > 0, 0, {s(f'MT{j}')})"
    for k in range(1, n + 1):
        new[f"E{k}"] = cleared(k, f"if({keeps(k)}, {entry_before(k)}, {s(f'E{k}')})")
        if exclusions:
            excluded = f"if({keeps(k)}, 0, {s(f'X{k}')})"
            new[f"X{k}"] = f"if({excluded_at(k)}, 1, {excluded})" if k < n else excluded
        for j in range(2, k + 1):
            value = "t" if j == k else s(f"P{k - 1}_{j}")
            new[f"P{k}_{j}"] = cleared(k, f"if({keeps(k)}, {value}, {s(f'P{k}_{j}')})")
    state = "tuple(" + ", ".join(f"toInt64({new[name]})" for name in s.names) + ")"
    step = f"arrayMap(c -> {state}, [multiIf({best}, 0)])[1]"
    init = "tuple(" + ", ".join("toInt64(0)" for _ in s.names) + ")"
    params = ["s", "t", "mm"] + (["xx"] if exclusions else []) + (["bb"] if attribution_step is not None else [])
    arrays = ["ts", "m"] + (["x"] if exclusions else []) + (["b"] if attribution_step is not None else [])
    fold = f"arrayFold(({', '.join(params)}) -> if(s.1 = 1, s, {step}), {', '.join(arrays)}, {init})"
    times = ", ".join([s("ME", "f")] + [s(f"MT{j}", "f") for j in range(2, n + 1)])
    step_reached = f"if({s('MX', 'f')} = 1, -2, {s('M', 'f')} - 1)"
    times_of_best = f"arraySlice([{times}], 1, {s('M', 'f')})"
    return Replay((((fold, "f"), (step_reached, "step_reached"), (times_of_best, "times")),))


def unordered_expr(n: int, window: int) -> str:
    """For unordered funnels: (steps done in the best window, that window's sorted first time per step)."""
    in_window = f"arrayFilter((m2, t2) -> t2 <= t AND t - t2 <= {window}, m, ts)"
    firsts = (
        f"arraySort(arrayFilter(v -> v < 9223372036854775807, arrayMap(k -> arrayMin(arrayMap((t2, m2) -> "
        f"if(bitTest(m2, k - 1) AND t2 <= t AND t - t2 <= {window}, t2, 9223372036854775807), ts, m)), "
        f"range(1, {n + 1}))))"
    )
    per_end = f"arrayMap(t -> tuple(bitCount(arrayReduce('groupBitOr', {in_window})), {firsts}), ts)"
    best = f"arrayMax(arrayMap(w -> w.1, {per_end}))"
    return f"arrayFirst(w -> w.1 = {best}, {per_end})"


def unordered_replay(n: int, window: int) -> Replay:
    """The unordered funnel's per-person result as a :class:`Replay` (one layer)."""
    body = unordered_expr(n, window)
    return Replay((((f"({body})", "u"), ("tupleElement(u, 1) - 1", "step_reached"), ("tupleElement(u, 2)", "times")),))
