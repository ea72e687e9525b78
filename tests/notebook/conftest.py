"""Plots render off-screen (Agg) and every test's figures are closed."""

from __future__ import annotations

from collections.abc import Iterator

import matplotlib
import pytest

matplotlib.use("Agg")  # before pyplot is imported anywhere: no display, deterministic rendering

import matplotlib.pyplot as plt


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")
