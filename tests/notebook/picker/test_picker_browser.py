"""The picker in a real browser: JupyterLab driven by Debian's Chromium, headless, through Selenium.

A notebook in a JupyterLab server opens a picker on the session's real service; the browser runs it, chooses the
metric experiment in the box as a person would (typing its label), and must then show each metric's verdict as
the client computes it. Nothing is downloaded: the browser and its driver are Debian's packages (``apt-get
install chromium chromium-driver``); without them this test is skipped, saying so. With
``HOGLAB_SCREENSHOTS=<dir>`` the picker's screenshot is kept there (docs/images/ holds the one docs/notebook.md
shows).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
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
def lab(tmp_path: Path, hoglab_service: Any) -> Iterator[tuple[str, Client, int]]:
    """A fed metric experiment on the real service, and a JupyterLab server whose notebook opens a picker on it."""
    store = hoglab_service.state.store
    record = store.projects.create("picker in a browser")
    _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label="browser test")
    client = Client(hoglab_service.url, key, record.id, progress=False)
    demo = feed_metric_experiment(client, users=1000)
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
         f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={tmp_path}"],
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
        yield f"http://127.0.0.1:{port}/lab/tree/picker.ipynb?token={TOKEN}", client, demo.experiment.id
    finally:
        server.terminate()  # the server shuts its kernels down
        server.wait(30)
        log.close()
        client.close()


def test_choosing_a_metric_experiment_in_jupyterlab_shows_its_verdicts(lab: Any, tmp_path: Path) -> None:
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    url, client, experiment_id = lab
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1300,2600"):  # fmt: skip
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
        labels = driver.execute_script(
            "return Array.from(document.querySelectorAll('datalist option')).map(o => o.value)"
        )
        label = next(text for text in labels if text.endswith(f"#{experiment_id}"))
        box.send_keys(label, Keys.ENTER)
        method = "//*[starts-with(normalize-space(.), 'Method:')]"
        wait.until(ec.presence_of_element_located((By.XPATH, method)), "the chosen experiment's results")
        shown = driver.find_element(By.CSS_SELECTOR, ".jp-OutputArea-output .widget-vbox").text
        result = client.experiments.results(experiment_id)
        assert isinstance(result, MetricExperimentResult)
        for answer in result.metrics:  # each metric's verdict, as the client computes it
            assert result.metric_verdict(answer) in shown, result.metric_verdict(answer)
        assert "Method: bayesian" in shown and "SRM check p" in shown
        wait.until(
            lambda d: d.execute_script(  # the figure, once its PNG has loaded
                "const i = document.querySelector('.widget-vbox img'); return i && i.complete && i.naturalWidth > 0"
            )
        )
        driver.execute_script("document.querySelectorAll('.jp-Notification-Toast, .Toastify').forEach(e => e.remove())")
        target = Path(os.environ.get("HOGLAB_SCREENSHOTS") or tmp_path) / "picker-metric-experiment.png"
        assert driver.find_element(By.CSS_SELECTOR, ".jp-OutputArea-output .widget-vbox").screenshot(str(target))
    except Exception:
        driver.save_screenshot(str(tmp_path / "failed.png"))
        print("page at failure:", tmp_path / "failed.png", driver.find_element(By.TAG_NAME, "body").text[-3000:])
        raise
    finally:
        driver.quit()
