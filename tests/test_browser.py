"""A newcomer's path in a real browser: JupyterLab started from the venv, a notebook opened in
Chromium and run there with the smoke parameters; its figure must appear and no cell may end in
an error. Skipped where no browser is installed (`.ci/run` installs Debian's chromium and
chromium-driver where it can)."""
from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import papermill
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
NOTEBOOK = "02_sampling_speedup"  # the quickest notebook with a figure at smoke size
RUN_TIMEOUT_S = 300

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER), reason="no browser: install chromium and chromium-driver "
                                      "(Debian: apt-get install chromium chromium-driver)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_server(url: str, server: subprocess.Popen, timeout_s: float = 90) -> None:
    """Until JupyterLab answers `url`; fails with its log if it exits first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"jupyter lab exited with {server.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"jupyter lab did not answer {url} in {timeout_s} s")


# The notebook panel JupyterLab shows (window.jupyterapp: --expose-app-in-browser).
PANEL = "window.jupyterapp && window.jupyterapp.shell.currentWidget"
KERNEL_READY = f"return !!({PANEL} && {PANEL}.sessionContext.session && " \
               f"{PANEL}.sessionContext.session.kernel && " \
               f"{PANEL}.sessionContext.session.kernel.status === 'idle')"


def command_result(driver, command: str) -> object:
    """Run a JupyterLab command in the page and wait for its promise: its value, or the
    error's text."""
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"window.jupyterapp.commands.execute('{command}')"
        ".then(value => done(value === undefined ? null : value), error => done(String(error)));")


def test_a_notebook_runs_in_jupyterlab_in_a_browser(tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    smoke = yaml.safe_load((ROOT / "notebooks" / "params" / "smoke.yaml").read_text())
    notebook = tmp_path / f"{NOTEBOOK}.ipynb"
    papermill.execute_notebook(str(ROOT / "notebooks" / f"{NOTEBOOK}.ipynb"), str(notebook),
                               parameters=smoke | {"out_dir": str(tmp_path)},
                               prepare_only=True, progress_bar=False)
    port, token = free_port(), secrets.token_hex(16)
    env = os.environ | {"GNNREPRO_DATA": str(tmp_path / "data"), "GNNREPRO_PROGRESS": "off",
                        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
                        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
                        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces")}
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
               "--ip=127.0.0.1", f"--ServerApp.token={token}", "--expose-app-in-browser",
               f"--notebook-dir={tmp_path}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = (tmp_path / "jupyter.log").open("w")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    driver = None
    try:
        wait_for_server(f"http://127.0.0.1:{port}/api/status?token={token}", server)
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1400,1000"):
            options.add_argument(flag)
        try:
            driver = webdriver.Chrome(options=options,
                                      service=webdriver.ChromeService(executable_path=DRIVER))
        except WebDriverException as exc:  # the machine's browser, not our code
            pytest.skip(f"no browser: chromium did not start ({exc.msg})")
        driver.get(f"http://127.0.0.1:{port}/lab/tree/{notebook.name}?token={token}")
        WebDriverWait(driver, 120).until(lambda d: d.execute_script(KERNEL_READY))
        driver.set_script_timeout(RUN_TIMEOUT_S)
        run_all = command_result(driver, "notebook:run-all-cells")
        WebDriverWait(driver, 60, poll_frequency=1).until(lambda d: d.execute_script(KERNEL_READY))
        images = driver.execute_script(
            "return document.querySelectorAll('.jp-OutputArea-output img').length")
        saved = command_result(driver, "docmanager:save")
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        server.wait(timeout=30)
        log.close()
    assert saved is not False, f"saving the notebook failed: {saved}"
    executed = nbformat.read(notebook, as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, f"a cell ended in an error: {errors[0]['ename']}: {errors[0]['evalue']}"
    assert run_all is True and all(c.execution_count for c in code), "not every cell ran"
    assert images >= 1, "the notebook's figure did not appear in the page"
    assert any("image/png" in o.get("data", {}) for c in code for o in c.get("outputs", []))
    assert (tmp_path / "figures" / "smoke" / f"{NOTEBOOK}.png").stat().st_size > 1000
