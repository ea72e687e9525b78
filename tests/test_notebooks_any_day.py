"""The tour notebooks run under nbval, and their checked outputs hold on any day and in any time zone.

This is how ``make test`` runs the notebooks: twice, each time with the clock moved (libfaketime, preloaded into
the notebooks' kernels) and a non-UTC ``TZ``. Moving the clock moves the demo data
(it ends at today's midnight, UTC), the client's "now" and pandas' ``now()``. chDB keeps the real clock (it reads
time without going through libc's wrappers), so a checked cell that asked for a date relative to now would see the
demo data shifted by days against its window and fail here: exactly the dependence this guards against.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# (clock offset, time zone): a few days on (another weekday), weeks on, a half-hour zone and one behind UTC.
CLOCKS = [("+3d", 3, "Asia/Kolkata"), ("+17d", 17, "America/Los_Angeles")]


def _faketime_library() -> str | None:
    """The libfaketime shared object of the ``libfaketime`` package (a dev dependency), if it loads here."""
    import libfaketime

    path = Path(libfaketime.__file__).parent / "vendor" / "libfaketime" / "src" / "libfaketime.so.1"
    try:
        ctypes.CDLL(str(path))
    except OSError:  # the package ships an x86-64 build
        return None
    return str(path)


def _notebook_env(zone: str) -> dict[str, str]:
    """This environment without a service to point at (the notebooks start their own demo), in ``zone``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOGLAB_", "PYTEST_", "COV_"))}
    env["TZ"] = zone
    return env


@pytest.mark.slow
@pytest.mark.parametrize(("offset", "days", "zone"), CLOCKS, ids=[f"{o}-{z}" for o, _, z in CLOCKS])
def test_the_tours_check_out_with_the_clock_moved(offset: str, days: int, zone: str) -> None:
    env = _notebook_env(zone)
    library = _faketime_library()
    if library is None and offset != CLOCKS[0][0]:
        pytest.skip("libfaketime cannot be loaded on this machine: the notebooks ran once, on the real clock")
    if library is None:
        days = 0  # still check the notebooks, on the real clock, in this zone
    else:
        # Monotonic clocks stay real: the kernels' timers and timeouts must not jump.
        env.update(LD_PRELOAD=library, FAKETIME=offset, DONT_FAKE_MONOTONIC="1")
    seen = subprocess.run(
        [sys.executable, "-c", "import datetime as d; print(d.datetime.now(d.UTC).isoformat())"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()
    moved = datetime.fromisoformat(seen) - datetime.now(UTC)
    assert abs(moved - timedelta(days=days)) < timedelta(hours=1), f"the clock did not move: {seen}"

    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "--nbval-lax",
         "--nbval-current-env", "--nbval-sanitize-with", "notebooks/sanitize.cfg", "notebooks"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert run.returncode == 0, f"with the clock at {offset} and TZ={zone}:\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}"
