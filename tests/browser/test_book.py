"""A reader's view of the executed book, offline: chapter 4a executed from the rows the notebooks
stored earlier in this run (browser tests run last), every other page rendered unexecuted, and the
built site opened over file:// in headless Chromium with every request that is not a local file
blocked. The sidebar lists every chapter and lab, a search finds chapter 4, chapter 4a's panel
shows its controls and its last chart, an Altair chart draws, and no request left the page.
A screenshot lands in artifacts/browser/ (git-ignored)."""
import shutil
from pathlib import Path

import pytest

from helpers import book, registry
from tests.conftest import ROOT

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "artifacts" / "browser"


def need_the_book_and_a_browser() -> None:
    """Skip, saying which, where chromium, playwright, the book's tools or the widget manager are missing."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (bash guide.sh test installs it as root)")
    pytest.importorskip("playwright")
    pytest.importorskip("myst_nb", reason="the book's tools are not installed (bash guide.sh test installs them)")
    if not (book.WIDGETS / "embed.js").exists():
        pytest.skip(f"the widget manager is not fetched ({book.WIDGETS}; bash guide.sh test fetches it)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    need_the_book_and_a_browser()
    out = tmp_path_factory.mktemp("book") / "book"
    status = book.build(["04a"], out, timeout=900, log=lambda *_: None)
    assert list(status.values()) == ["ok"], status
    return out


@pytest.fixture(scope="module")
def browser(site):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _open(browser, url: str):
    """A page that lets only local files through; returns it and the list of blocked requests."""
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    blocked = []

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()
    page.route("**/*", route)
    page.goto(url)
    page.wait_for_load_state("load")
    return page, blocked


def test_the_sidebar_lists_every_chapter_and_lab(site, browser):
    page, blocked = _open(browser, (site / "index.html").as_uri())
    sidebar = page.locator(".bd-sidebar-primary").inner_text().replace("\n", " ").replace("\u2019", "'")  # smart quotes
    for ch in registry.chapters():
        assert ch["title"] in sidebar, ch["title"]
    assert not blocked


def test_a_search_for_prefix_caching_finds_chapter_4(site, browser):
    page, blocked = _open(browser, (site / "search.html").as_uri() + "?q=prefix+caching")
    page.wait_for_selector("#search-results li", timeout=20_000)
    links = page.locator("#search-results li a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert any("04a_samples_and_prefix_caching" in (h or "") for h in links), links
    assert not blocked


def test_chapter_4a_panel_shows_its_controls_and_its_chart_and_a_chart_draws(site, browser):
    page, blocked = _open(browser, (site / "notebooks" / "04a_samples_and_prefix_caching.html").as_uri())
    page.wait_for_selector(".widget-gridbox", timeout=20_000)  # drawn by the local widget manager
    panel = page.locator(".widget-vbox").filter(has=page.locator(".widget-gridbox")).first
    assert panel.locator("select").count() >= 1 and panel.locator("button").count() >= 1
    shown = page.locator(".widget-dropdown select").evaluate_all("els => els.map(e => e.selectedIndex)")
    assert shown and min(shown) >= 0, "every dropdown shows its choice (the engine's default too), none is blank"
    assert panel.locator("input[type=checkbox]").count() >= 1
    assert panel.locator("svg, img").count() >= 1, "the panel's last chart, from its saved state"
    assert book.PANEL_NOTE.strip("*").split(".")[0] in page.inner_text("body")
    drawn = page.locator("img[src$='.svg']").evaluate_all("els => els.filter(e => e.naturalWidth > 0).length")
    assert drawn >= 1, "an Altair chart, as SVG, loaded and drawn"
    panel.scroll_into_view_if_needed()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "book-04a-panel.png"))
    assert not blocked, blocked
