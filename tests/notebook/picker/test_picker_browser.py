"""The picker in a real browser: JupyterLab driven by Debian's Chromium, headless, through Selenium.

A notebook in a JupyterLab server opens a picker on the session's real service, in a project with an older running
experiment, the fed metric experiment (started last) and a draft (made last). The browser runs it: the picker must
open on the newest running experiment, show each metric's verdict as the client computes it, and show its figure
whole: the image inside the output area at a wide and a narrow window, never wider than drawn (not stretched), and
nothing drawn on the image's outermost pixels (no panel, title or label cut by its edge). Then choosing the older
experiment in the box, as a person would (typing its label), shows that one. Nothing is downloaded: the browser and
its driver are Debian's packages (``apt-get install chromium chromium-driver``); without them this test is skipped,
saying so. With ``HOGLAB_SCREENSHOTS=<dir>`` the picker's screenshot is kept there (docs/images/ holds the one
docs/notebook.md shows).
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import nbformat
import numpy as np
import pytest
from selenium import webdriver

from hoglab.client import Client, MetricExperimentResult
from hoglab.notebook.tours import feed_metric_experiment

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver packages"),
]
TOKEN = "hoglab-picker-test"
BOX = "input[placeholder='Type to search experiments']"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def lab(tmp_path: Path, hoglab_service: Any) -> Iterator[tuple[str, Client, int, int]]:
    """An older running experiment, a fed metric experiment and a draft on the real service, and a JupyterLab
    server whose notebook opens a picker on their project."""
    store = hoglab_service.state.store
    record = store.projects.create("picker in a browser")
    _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label="browser test")
    client = Client(hoglab_service.url, key, record.id, progress=False)
    older = client.experiments.create("Older test", "older-flag", start=datetime.now(UTC) - timedelta(days=30)).id
    demo = feed_metric_experiment(client, users=1000)
    client.experiments.create("Made last, not launched", "draft-flag")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(
        f"import hoglab\nclient = hoglab.connect({hoglab_service.url!r}, {key!r}, {record.id})\n"
        "picker = hoglab.ExperimentPicker(client)\npicker"
    )]  # fmt: skip
    notebook.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    nbformat.write(notebook, tmp_path / "picker.ipynb")
    port = _free_port()
    source = str(Path(__file__).resolve().parents[3] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    log = (tmp_path / "lab.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1", "--allow-root",
         f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={tmp_path}",
         f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}"],  # a layout of its own, not one left by an earlier run
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "lab.log").read_text()[-2000:]
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/lab/tree/picker.ipynb?token={TOKEN}", client, demo.experiment.id, older
    finally:
        server.terminate()  # the server shuts its kernels down
        server.wait(30)
        log.close()
        client.close()


# The figure as the browser shows it: its box, the output area's, the width it was drawn for, and its pixels.
FIGURE = """
const img = document.querySelector('.jp-OutputArea-output .widget-vbox img');
if (!img || !img.complete || !img.naturalWidth) return null;
const area = img.closest('.jp-OutputArea-output').getBoundingClientRect();
const box = img.getBoundingClientRect();
const canvas = document.createElement('canvas');
canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
canvas.getContext('2d').drawImage(img, 0, 0);
const room = img.parentElement.getBoundingClientRect().width;
return {left: box.left, right: box.right, width: box.width, height: box.height, areaLeft: area.left, room: room,
        areaRight: area.right, drawnWidth: parseFloat(img.getAttribute('width')), naturalWidth: img.naturalWidth,
        naturalHeight: img.naturalHeight, png: canvas.toDataURL('image/png')};
"""


def _figure_shown_whole(driver: Any) -> dict[str, Any]:
    """The picker's figure, asserted whole: inside the output area, not stretched, nothing on its edge pixels."""
    shown = driver.execute_script(FIGURE)
    assert shown is not None, "no figure"
    assert shown["areaLeft"] - 0.5 <= shown["left"] and shown["right"] <= shown["areaRight"] + 0.5, shown
    assert shown["width"] <= shown["drawnWidth"] + 0.5, "stretched past the size it was drawn for"
    assert shown["width"] == pytest.approx(min(shown["drawnWidth"], shown["room"]), abs=1)  # shrunk only to fit
    assert shown["height"] == pytest.approx(shown["width"] * shown["naturalHeight"] / shown["naturalWidth"], abs=2)
    pixels = mpimg.imread(io.BytesIO(base64.b64decode(shown["png"].split(",", 1)[1])), format="png")
    edges = np.concatenate([pixels[:2].reshape(-1, 4), pixels[-2:].reshape(-1, 4), pixels[:, :2].reshape(-1, 4),
                            pixels[:, -2:].reshape(-1, 4)])  # fmt: skip
    drawn = (edges[:, :3] < 0.98).any(axis=1) & (edges[:, 3] > 0)
    assert not drawn.any(), f"{int(drawn.sum())} pixels drawn on the image's edge: something is cut"
    return dict(shown)


def test_the_picker_opens_on_the_newest_running_experiment_and_shows_its_figure_whole(
    lab: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    url, client, experiment_id, older = lab
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1500,2600"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        wait = WebDriverWait(driver, 300)  # a loaded machine starts JupyterLab and its kernel slowly
        driver.get(url)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")), "the notebook")
        idle = "//*[contains(@class,'jp-StatusBar')]//*[contains(normalize-space(.), 'Idle')]"
        wait.until(ec.presence_of_element_located((By.XPATH, idle)), "an idle kernel")  # else Run All is disabled
        run = "//li[contains(@class,'lm-MenuBar-item')]//div[text()='Run']"
        wait.until(ec.element_to_be_clickable((By.XPATH, run)), "the Run menu").click()
        run_all = ("//li[contains(@class,'lm-Menu-item') and not(contains(@class,'lm-mod-disabled'))]"
                   "//div[@class='lm-Menu-itemLabel' and text()='Run All Cells']")  # fmt: skip
        wait.until(ec.element_to_be_clickable((By.XPATH, run_all)), "Run All Cells").click()
        box = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, BOX)), "the picker's box")
        # Nothing typed: the picker opened on the newest running experiment (not the older one, not the draft).
        method = "//*[starts-with(normalize-space(.), 'Method:')]"
        wait.until(ec.presence_of_element_located((By.XPATH, method)), "the newest experiment's results")
        assert box.get_attribute("value").endswith(f"#{experiment_id}")
        shown = driver.find_element(By.CSS_SELECTOR, ".jp-OutputArea-output .widget-vbox").text
        result = client.experiments.results(experiment_id)
        assert isinstance(result, MetricExperimentResult)
        for answer in result.metrics:  # each metric's verdict, as the client computes it
            assert result.metric_verdict(answer) in shown, result.metric_verdict(answer)
        assert "Method: bayesian" in shown and "SRM check p" in shown
        wait.until(lambda d: d.execute_script(FIGURE) is not None, "the figure, once its PNG has loaded")
        wide = _figure_shown_whole(driver)
        driver.execute_script("document.querySelectorAll('.jp-Notification-Toast, .Toastify').forEach(e => e.remove())")
        target = Path(os.environ.get("HOGLAB_SCREENSHOTS") or tmp_path) / "picker-metric-experiment.png"
        assert driver.find_element(By.CSS_SELECTOR, ".jp-OutputArea-output .widget-vbox").screenshot(str(target))
        driver.set_window_size(700, 2600)  # a narrow window: the figure shrinks to fit, still whole
        wait.until(lambda d: (d.execute_script(FIGURE) or {}).get("room", 1e9) < wide["room"] - 50, "a narrower area")
        narrow = _figure_shown_whole(driver)
        assert narrow["width"] < narrow["drawnWidth"] - 50  # shrunk to fit, whole
        driver.set_window_size(1500, 2600)
        wait.until(lambda d: (d.execute_script(FIGURE) or {}).get("room", 0) > narrow["room"] + 50, "the wide area")
        # Choosing in the box, as a person would: typing the older experiment's label.
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
        labels = driver.execute_script(
            "return Array.from(document.querySelectorAll('datalist option')).map(o => o.value)"
        )
        label = next(text for text in labels if text.endswith(f"#{older}"))
        box.clear()
        box.send_keys(label, Keys.ENTER)
        wait.until(ec.presence_of_element_located((By.XPATH, "//*[contains(normalize-space(.), 'older-flag')]")),
                   "the older experiment's summary")  # fmt: skip
    except Exception:
        driver.save_screenshot(str(tmp_path / "failed.png"))
        print("page at failure:", tmp_path / "failed.png", driver.find_element(By.TAG_NAME, "body").text[-3000:])
        raise
    finally:
        driver.quit()
