"""The book's pieces without a kernel: chapter order, charts to SVG, pages that need no network."""
from pathlib import Path

import altair as alt
import nbformat
import pandas as pd

from helpers import book, registry


def test_contents_are_in_chapter_order():
    ordered = [c["path"].stem for c in book.order(registry.chapters())]
    assert ordered.index("00_start_here") < ordered.index("01_why_tuning_matters") < ordered.index("04a_samples_and_prefix_caching")
    assert ordered.index("04a_samples_and_prefix_caching") < ordered.index("04b_compilation_and_logging")
    assert ordered.index("04b_compilation_and_logging") < ordered.index("lab01_kv_capacity") < ordered.index("90_workshop_room")
    assert ordered[-1] == "90_workshop_room"


def _notebook_with_a_chart():
    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_line().encode(x="x:Q", y="y:Q")
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("chart")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"application/vnd.vegalite.v5+json": chart.to_dict(),
                                                                   "text/plain": "<VegaLite 5 object>"}),
                    nbformat.v4.new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                                                                   "text/plain": "Panel(...)"})]
    nb.cells = [nbformat.v4.new_markdown_cell("# T\n\nSee [chapter 1](01_why_tuning_matters.ipynb#stock) and "
                                              "[lab 1](../labs/lab01_kv_capacity.ipynb)."), cell]
    nb.metadata["widgets"] = {"state": {}}
    return nb


def test_offline_renders_charts_to_svg_and_drops_widgets():
    nb = _notebook_with_a_chart()
    out = book.offline(nb)
    data = out.cells[1].outputs[0]["data"]
    assert data["image/svg+xml"].startswith("<svg") and not any("vegalite" in m for m in data)
    assert list(out.cells[1].outputs[1]["data"]) == ["text/plain"] and "widgets" not in out.metadata
    assert "application/vnd.vegalite.v5+json" in nb.cells[1].outputs[0]["data"]  # the executed copy keeps its spec


def test_pages_have_inline_charts_local_links_and_no_cdn_scripts():
    page = book.to_html(book.offline(_notebook_with_a_chart()), "*Executed on a test machine*")
    assert "<svg" in page and "data:image/svg+xml;base64" not in page.split("jp-RenderedSVG", 1)[1][:300]
    assert 'href="01_why_tuning_matters.html#stock"' in page and 'href="../labs/lab01_kv_capacity.html"' in page
    assert "Executed on a test machine" in page
    assert not book.EXTERNAL_SCRIPT.search(page)


def test_page_paths_mirror_the_repository():
    nb = book.ROOT / "labs" / "lab01_kv_capacity.ipynb"
    assert book.page_path(nb, Path("/o")) == Path("/o/labs/lab01_kv_capacity.html")
