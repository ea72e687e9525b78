"""The per-person replay of an ordered or strict funnel as one ``arrayFold`` (the rules: ``funnels_sql``).

The fold walks a person's events sorted by time (arrays ``ts`` microseconds, ``m`` step bits, and when needed
``x`` exclusion bits and ``b`` breakdown values) and keeps its state in one flat tuple of Int64 (``_Layout``).
ClickHouse evaluates a fold one array position at a time over a block of persons, running the lambda's
expressions once per position: scalar columns cost far less there than the nested arrays an obvious state
(times per attempt as ``Array(Array(Int64))``) would, about 2-3x less for a 3-step funnel.

>>> replay = fold_expr(2, 10, strict=False, attribution_step=None, exclusions=False)
>>> replay.fold.startswith("arrayFold((s, t, mm) -> ")
True
>>> replay.step_reached, replay.times
('if(f.4 = 1, -2, f.2 - 1)', 'arraySlice([f.3, f.5], 1, f.2)')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Replay", "fold_expr"]


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


@dataclass(frozen=True)
class Replay:
    """The replay: ``fold`` (the caller names it ``f``) and the expressions that read its result."""

    fold: str
    step_reached: str
    times: str


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
    return Replay(
        fold=fold,
        step_reached=f"if({s('MX', 'f')} = 1, -2, {s('M', 'f')} - 1)",
        times=f"arraySlice([{times}], 1, {s('M', 'f')})",
    )
