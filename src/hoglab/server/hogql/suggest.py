"""Did-you-mean: the names closest to a misspelt one, for error messages and warnings that say what to do.

Cheap (``difflib`` over a few hundred names, only once something is already wrong) and case-insensitive, as
HogQL's function names are; the suggestions keep their own spelling.

>>> close_matches("countt", ["count", "countIf", "sum"])
['count', 'countIf']
>>> did_you_mean("evnts", ["events", "persons"])
"did you mean 'events'?"
>>> did_you_mean("zzz", ["events"])
''
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["close_matches", "did_you_mean"]

CUTOFF = 0.75
"""How alike (``difflib``'s ratio, 0-1) a candidate must be: one slip in a short word, a few in a long one."""


def close_matches(word: str, candidates: Iterable[str], *, n: int = 3, cutoff: float = CUTOFF) -> list[str]:
    """Up to ``n`` of ``candidates`` closest to ``word``, best first (compared without case); never ``word``
    itself."""
    by_lower: dict[str, str] = {}
    for name in candidates:
        by_lower.setdefault(name.lower(), name)
    by_lower.pop(word.lower(), None)
    found = difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=cutoff)
    return [by_lower[match] for match in found]


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``"did you mean 'x'?"`` for the closest candidate; ``""`` when none is close."""
    found = close_matches(word, candidates, n=1)
    return f"did you mean '{found[0]}'?" if found else ""
