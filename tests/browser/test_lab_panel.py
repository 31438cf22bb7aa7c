"""A person's view of every control panel: JupyterLab in headless Chromium runs a notebook to its
panel, sets the panel's dropdowns, presses Run once, and checks that the chart gains the run.

Each panel is clicked with the cheapest choice it offers. Where the notebook stored a row of that
choice (nbval ran it earlier in the suite), Run reads it back: the click checks the wiring from the
dropdown to the config, the store and the chart. Two panels force a real run (chunked prefill off in
notebook 03, prefix caching off in 04a), so the engine path behind a click (start, progress,
measure) is exercised from the browser too.

Uses Debian's chromium (no browser download). One JupyterLab serves every case; the notebooks are
copied to a temporary folder so its autosave never writes outputs into the committed files. Each
case opens its notebook in a workspace of its own and shuts its kernel down, so its engine goes
within the grace. Screenshots land in
artifacts/browser/ (git-ignored).
"""
import json
import os
import re
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
LAST = object()  # a dropdown's last option, whatever this machine offers


# (notebook, which of its panels, {dropdown: option}, force a real run, what the new run's label says)
PANELS = [
    # max_model_len back to the model's context: "stock + budget", measured in section 1.1
    ("notebooks/01_why_tuning_matters.ipynb", 0, {"max_model_len": LAST}, False, ""),
    # a memory fraction of the sweep in 2.1 (on a CPU at smoke size: the first not the guide's default)
    ("notebooks/02_throughput_latency_memory.ipynb", 0, {"gpu_memory_utilization": ("0.15", "0.25")}, False, ""),
    ("notebooks/03_batching_and_chunked_prefill.ipynb", 0, {"enable_chunked_prefill": "off"}, True,
     "chunked=off"),
    ("notebooks/04a_samples_and_prefix_caching.ipynb", 0, {"enable_prefix_caching": "off"}, True,
     "prefix cache=off"),
    # the eager engine at 4 in flight: measured in 4.3
    ("notebooks/04b_compilation_and_logging.ipynb", 0, {"engine": "eager"}, False, ""),
    # the last weights offered here, with the auto KV cache: one of the side-by-side rows
    ("notebooks/05_quantization_and_parallelism.ipynb", 0, {"weights": LAST}, False, ""),
    # TP=1, measured in 5.3
    ("notebooks/05_quantization_and_parallelism.ipynb", 1, {}, False, ""),
    # the panel's defaults: the baseline, measured by notebook 06a or at the lab's start
    ("labs/lab04_tune_it_yourself.ipynb", 0, {}, False, ""),
]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(base: str, token: str, path: str, method: str = "GET"):
    req = urllib.request.Request(f"{base}{path}?token={token}", method=method)
    with urllib.request.urlopen(req, timeout=10) as r:
        body = r.read()
    return json.loads(body) if body else None


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (bash guide.sh test installs it as root)")
    pytest.importorskip("playwright")
    tmp = tmp_path_factory.mktemp("lab")
    work = tmp / "guide"
    for notebook in {p[0] for p in PANELS}:
        (work / notebook).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / notebook, work / notebook)
    port, token = _free_port(), secrets.token_hex(16)
    settings = tmp / "settings"
    # Render every cell (no virtual scrolling), and no news prompt over the page.
    for ext, body in {"@jupyterlab/notebook-extension/tracker": '{"windowingMode": "none"}',
                      "@jupyterlab/apputils-extension/notification": '{"fetchNews": "false"}'}.items():
        (settings / ext).parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{ext}.jupyterlab-settings").write_text(body)
    from helpers.engine import shared
    shared.stop_engine("the browser test begins")  # each kernel starts its own, with this grace
    env = {**os.environ, "GUIDE_SIZE": "smoke", "GUIDE_ENGINE_GRACE": "3", "JUPYTER_CONFIG_DIR": str(tmp / "cfg"),
           "JUPYTERLAB_SETTINGS_DIR": str(settings),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "ws")}
    log = open(tmp / "jupyter.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
         "--LabApp.news_url=", "--ServerApp.open_browser=False"] + (["--allow-root"] if os.getuid() == 0 else []),
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            _api(base, token, "/api/status")
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("JupyterLab did not start: " + (tmp / "jupyter.log").read_text()[-2000:])
    yield base, token
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    _no_engine_left()


def _no_engine_left():
    deadline = time.monotonic() + 3 + 40  # a kernel's engine goes down after the grace
    while vllm_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not vllm_processes(), vllm_processes()


def _choose(page, panel, name: str, option) -> None:
    """Set the dropdown described `name` to the option labelled `option` (LAST: its last option; a
    tuple: the first of those labels it offers)."""
    described = page.locator("label", has_text=re.compile(f"^{re.escape(name)}$"))
    select = panel.locator(".widget-dropdown").filter(has=described).locator("select")
    labels = [t.strip() for t in select.locator("option").all_inner_texts()]
    wanted = (option,) if isinstance(option, str) else () if option is LAST else option
    offered = [labels.index(w) for w in wanted if w in labels]
    assert option is LAST or offered, f"{name}: none of {wanted} in {labels}"
    select.select_option(index=len(labels) - 1 if option is LAST else offered[0])


@pytest.mark.parametrize("case", PANELS, ids=lambda p: f"{Path(p[0]).stem[:5]}-{p[1]}")
def test_a_panel_run_adds_a_run_to_its_chart(jupyter, case):
    from playwright.sync_api import expect, sync_playwright

    base, token = jupyter
    notebook, nth, choices, force, label = case
    name = f"{Path(notebook).stem[:5]}_{nth}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-quic"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            # a workspace of its own: JupyterLab would otherwise reopen the earlier cases' notebooks beside it
            page.goto(f"{base}/lab/workspaces/{name.replace('_', '-')}/tree/{notebook}?token={token}")
            page.locator(".jp-Notebook").wait_for(timeout=120_000)
            page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for(timeout=120_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            panel = page.locator(".guide-panel").nth(nth)
            panel.wait_for(state="attached", timeout=900_000)  # smoke size; reuses what nbval stored, else measures
            status = panel.locator(".guide-status")
            expect(status).to_contain_text("run(s) shown", timeout=300_000)
            shown = int(re.search(r"(\d+) run\(s\) shown", status.inner_text()).group(1))
            chosen = panel.locator("select").evaluate_all("els => els.map(e => e.selectedIndex)")
            assert min(chosen, default=0) >= 0, "every dropdown shows its choice (an engine default too)"
            # Let the cells after the panel finish, so the click is handled at once.
            expect(page.locator(".jp-Notebook-ExecutionIndicator").first).to_have_attribute(
                "data-status", "idle", timeout=900_000)
            panel.scroll_into_view_if_needed()
            chart = panel.locator(".jp-RenderedVegaCommon5, .vega-embed").first
            expect(chart).to_be_visible(timeout=60_000)
            before = chart.screenshot()
            for control, option in choices.items():
                _choose(page, panel, control, option)
            if force:
                panel.get_by_text("force re-run", exact=False).click()
            panel.get_by_role("button", name="Run").click()
            if force:
                expect(status).to_contain_text("starting", timeout=60_000)
            expect(status).to_contain_text(f"{shown + 1} run(s) shown", timeout=600_000)
            expect(status).to_have_attribute("data-state", "done")
            expect(status).to_contain_text(label)
            expect(chart).to_be_visible(timeout=60_000)
            expect(panel).not_to_contain_text("Error loading script")
            assert chart.screenshot() != before, "the chart draws the new run"
            panel.screenshot(path=str(ARTIFACTS / f"{name}_panel.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / f"failure_{name}.png"), full_page=True)
            raise
        finally:
            browser.close()
            for session in _api(base, token, "/api/sessions"):  # its kernel, and with it its engine
                _api(base, token, f"/api/sessions/{session['id']}", "DELETE")
            _no_engine_left()
