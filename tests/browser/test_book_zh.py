"""The Chinese book, offline: chapter 1 executed in Chinese (GUIDE_LANG=zh_CN) from the rows the English
notebooks stored earlier in this run (browser tests run last, so no engine starts), opened over file:// in
headless Chromium with every request that is not a local file blocked. Its page is in Chinese, its verdict
table says its verdicts in Chinese, and its chart titles are the catalog's."""
import pytest

from helpers import book
from tests.browser.test_book import CHROMIUM, need_the_book_and_a_browser

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    need_the_book_and_a_browser()
    out = tmp_path_factory.mktemp("book-zh") / "book"
    status = book.build(["01"], out, timeout=900, log=lambda *_: None, lang="zh_CN")
    assert list(status.values()) == ["ok"], status
    return out


def test_chapter_1_reads_in_chinese_with_its_verdicts_and_chart_titles(site):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        blocked = []
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://")
                   else (blocked.append(r.request.url), r.abort()))
        page.goto((site / "notebooks" / "01_why_tuning_matters.html").as_uri())
        page.wait_for_load_state("load")
        text = page.locator("main").inner_text()
        html = page.content()
        browser.close()
    assert "为什么优化设置值得逐行细读" in text  # the chapter's own Chinese title
    assert "在这台机器上的结论" in text  # the verdict table's heading, from the run-time catalog
    assert any(word in text for word in ("成立", "部分成立", "不成立", "此处无法判断", "此处在噪声范围内", "此处未测"))
    assert "首 token 延迟" in html or "吞吐" in html  # a chart's title or axis, as the catalog translates it
    assert not blocked
