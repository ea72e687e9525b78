"""The demo's report page in a real browser: Debian's Chromium, headless, through Selenium.

The full-size demo project (as ``hoglab demo`` makes it) on the session's data dir; its report written to disk, as
``hoglab demo`` writes it, and opened from the file. The browser must load every figure (none broken, none wider than
the page), list every health check with its severity, and show the novelty section with its figure. Nothing is
downloaded: the browser and its driver are Debian's packages (``apt-get install chromium chromium-driver``); without
them this test is skipped, saying so. With ``HOGLAB_SCREENSHOTS=<dir>`` the page's top (the verdict, the
recommendation and the health checks) and its novelty section are kept there as ``report-verdict.png`` and
``report-novelty.png``. The session's demo experiment is not #1 (other tests' experiments share the store), so the
ones docs/notebook.md shows (docs/images/) come from the page ``hoglab demo`` writes, through
:func:`keep_screenshots`.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import pytest
from selenium import webdriver

from hoglab.local import start_local_service
from hoglab.notebook import experiment_report

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver packages"),
]
WIDTH = 1100

# Where things are on the page, in CSS pixels from its top, and whether each image loaded whole.
LAYOUT = """
const top = (el) => el.getBoundingClientRect().top + window.scrollY;
const bottom = (el) => el.getBoundingClientRect().bottom + window.scrollY;
const health = [...document.querySelectorAll('div')]
  .find((d) => d.firstChild && d.firstChild.textContent === 'Health checks');
const novelty = [...document.querySelectorAll('h2')].find((h) => h.textContent.startsWith('Novelty'));
const figure = novelty && novelty.parentElement.querySelector('figure img[alt^="The effect by days"]');
const recommendation = health && health.previousElementSibling;
return {
  height: document.documentElement.scrollHeight, bodyWidth: document.body.getBoundingClientRect().width,
  images: [...document.images].map((i) => ({alt: i.alt, complete: i.complete, natural: i.naturalWidth,
                                           width: i.getBoundingClientRect().width})),
  healthItems: health ? [...health.querySelectorAll('li')].map((li) => li.textContent) : null,
  healthBottom: health ? bottom(health) : null, recommendationTop: recommendation ? top(recommendation) : null,
  noveltyTop: novelty ? top(novelty) : null, noveltyText: novelty ? novelty.nextElementSibling.textContent : null,
  noveltyFigureBottom: figure ? bottom(figure.closest('figure')) : null,
};
"""


@pytest.fixture
def driver() -> Any:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--hide-scrollbars", f"--window-size={WIDTH},1200"):  # fmt: skip
        options.add_argument(argument)
    browser = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(DRIVER)))
    yield browser
    browser.quit()


def test_the_demo_report_shows_its_health_checks_and_novelty(hoglab_service: Any, driver: Any, tmp_path: Path) -> None:
    with start_local_service(hoglab_service.data_dir, demo=True) as service:
        import hoglab

        client = hoglab.connect(service.url, service.api_key, service.project_id)
        experiment_id = int(client.experiments.list()["id"].iloc[0])
        report = experiment_report(experiment_id, client)
        page = report.write(tmp_path / "report")
        client.close()
    assert report.health is not None and report.novelty is not None

    driver.get(page.as_uri())
    layout = driver.execute_script(LAYOUT)
    assert len(layout["images"]) == len(report.figures)
    for image in layout["images"]:
        assert image["complete"] and image["natural"] > 0, image
        assert image["width"] <= layout["bodyWidth"] + 0.5, image
    assert layout["healthItems"] is not None and len(layout["healthItems"]) == len(report.health.checks)
    for check, item in zip(report.health.lines(), layout["healthItems"], strict=True):
        severity, rest = check[1:].split("] ", 1)
        assert item == f"{severity} {rest}"
    assert layout["noveltyTop"] is not None and layout["noveltyFigureBottom"] is not None
    assert layout["noveltyText"].startswith("Novelty (conversion rate): test's effect by days since first exposure")

    keep_screenshots(driver, Path(os.environ.get("HOGLAB_SCREENSHOTS") or tmp_path))


def keep_screenshots(driver: Any, keep: Path) -> None:
    """The open page's top (to the health checks) and its novelty section, as ``report-verdict.png`` and
    ``report-novelty.png`` in ``keep``."""
    layout = driver.execute_script(LAYOUT)
    driver.set_window_size(WIDTH, int(layout["height"]) + 200)
    layout = driver.execute_script(LAYOUT)
    shot = keep / "page.png"
    assert driver.save_screenshot(str(shot))
    pixels = mpimg.imread(shot)
    shot.unlink()
    scale = pixels.shape[1] / WIDTH  # device pixels per CSS pixel
    crops = {"report-verdict.png": (0, layout["healthBottom"] + 12),
             "report-novelty.png": (layout["noveltyTop"] - 12, layout["noveltyFigureBottom"] + 12)}  # fmt: skip
    for name, (start, end) in crops.items():
        part = pixels[int(start * scale) : int(end * scale)]
        assert part.shape[0] > 100, name
        buffer = io.BytesIO()
        mpimg.imsave(buffer, part, format="png")
        (keep / name).write_bytes(buffer.getvalue())
