"""A person's view: JupyterLab in headless Chromium runs a chapter to its control panel,
turns one switch off (chunked prefill in notebook 03, prefix caching in notebook 04), presses
Run, and waits for the chart to show the new run.

Uses Debian's chromium (no browser download). The notebook is copied to a temporary folder
so JupyterLab's autosave never writes outputs into the committed file. A screenshot lands in
artifacts/browser/ (git-ignored).
"""
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, vllm_processes

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "artifacts" / "browser"
# (notebook, the panel's switch to turn off, what the new run's label then says)
PANELS = [("03_batching_and_chunked_prefill.ipynb", "chunked prefill", "chunked=off"),
          ("04a_samples_and_prefix_caching.ipynb", "prefix caching", "prefix cache=off")]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(params=PANELS, ids=lambda p: p[0][:2])
def lab(request, tmp_path):
    notebook, switch, label = request.param
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (bash guide.sh test installs it as root)")
    pytest.importorskip("playwright")
    work = tmp_path / "guide"
    work.mkdir()
    shutil.copy(ROOT / "notebooks" / notebook, work / notebook)
    port, token = _free_port(), secrets.token_hex(16)
    settings = tmp_path / "settings"
    # Render every cell (no virtual scrolling), and no news prompt over the page.
    for ext, body in {"@jupyterlab/notebook-extension/tracker": '{"windowingMode": "none"}',
                      "@jupyterlab/apputils-extension/notification": '{"fetchNews": "false"}'}.items():
        (settings / ext).parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{ext}.jupyterlab-settings").write_text(body)
    from helpers.engine import shared
    shared.stop_engine("the browser test begins")  # the lab's kernel starts its own, with this grace
    env = {**os.environ, "GUIDE_SIZE": "smoke", "GUIDE_ENGINE_GRACE": "3", "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
           "JUPYTERLAB_SETTINGS_DIR": str(settings),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "ws")}
    log = open(tmp_path / "jupyter.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
         "--LabApp.news_url=", "--ServerApp.open_browser=False"] + (["--allow-root"] if os.getuid() == 0 else []),
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("JupyterLab did not start: " + (tmp_path / "jupyter.log").read_text()[-2000:])
    yield f"{base}/lab/tree/{notebook}?token={token}", notebook, switch, label
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 3 + 40  # the kernel's engine goes down after the grace
    while vllm_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not vllm_processes(), vllm_processes()


def test_panel_toggle_run_adds_a_run_to_the_chart(lab):
    from playwright.sync_api import expect, sync_playwright

    url, notebook, switch, label = lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-quic"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(url)
            page.locator(".jp-Notebook").wait_for(timeout=120_000)
            page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for(timeout=120_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            panel = page.locator(".guide-panel").first  # the chapter's first panel
            panel.wait_for(state="attached", timeout=900_000)  # smoke size; reuses what nbval stored, else measures
            status = panel.locator(".guide-status")
            expect(status).to_contain_text("1 run(s) shown", timeout=300_000)
            chosen = panel.locator("select").evaluate_all("els => els.map(e => e.selectedIndex)")
            assert min(chosen, default=0) >= 0, "every dropdown shows its choice (an engine default too)"
            # Let the cells after the panel finish, so the click is handled at once.
            expect(page.locator(".jp-Notebook-ExecutionIndicator").first).to_have_attribute(
                "data-status", "idle", timeout=900_000)
            panel.scroll_into_view_if_needed()
            panel.get_by_text(switch, exact=True).click()
            panel.get_by_text("force re-run", exact=False).click()
            panel.get_by_role("button", name="Run").click()
            expect(status).to_contain_text("starting", timeout=60_000)
            expect(status).to_contain_text("2 run(s) shown", timeout=600_000)
            expect(status).to_contain_text(label)
            chart = panel.locator(".jp-RenderedVegaCommon5, .vega-embed").first
            expect(chart).to_be_visible(timeout=60_000)
            expect(panel).not_to_contain_text("Error loading script")
            panel.screenshot(path=str(ARTIFACTS / f"notebook{notebook[:2]}_panel.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / f"failure{notebook[:2]}.png"), full_page=True)
            raise
        finally:
            browser.close()
