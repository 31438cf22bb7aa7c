"""The book's pieces without a kernel: chapter order, charts to SVG, pages that need no network."""

import altair as alt
import nbformat
import pandas as pd

from helpers import book, registry


def test_contents_are_in_chapter_order():
    ordered = [c["path"].stem for c in book.order(registry.chapters())]
    assert (ordered.index("00_start_here") < ordered.index("01_why_tuning_matters")
            < ordered.index("04a_samples_and_prefix_caching"))
    assert ordered.index("04a_samples_and_prefix_caching") < ordered.index("04b_compilation_and_logging")
    assert (ordered.index("04b_compilation_and_logging") < ordered.index("lab01_kv_capacity")
            < ordered.index("90_workshop_room"))
    assert ordered[-1] == "90_workshop_room"


def _notebook_with_a_chart():
    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_line().encode(x="x:Q", y="y:Q")
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("chart")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"application/vnd.vegalite.v5+json": chart.to_dict(),
                                                                   "text/plain": "<VegaLite 5 object>"}),
                    nbformat.v4.new_output("display_data",
                                           data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                                                 "text/plain": "Panel(...)"})]
    nb.cells = [nbformat.v4.new_markdown_cell("# T\n\nSee [chapter 1](01_why_tuning_matters.ipynb#stock) and "
                                              "[lab 1](../labs/lab01_kv_capacity.ipynb)."), cell]
    nb.metadata["widgets"] = {"state": {}}
    return nb


def test_offline_renders_charts_to_svg_in_outputs_and_in_saved_widget_state():
    nb = _notebook_with_a_chart()
    spec = nb.cells[1].outputs[0]["data"]["application/vnd.vegalite.v5+json"]
    out_widget = {"model_name": "OutputModel", "state": {"outputs": [
        {"output_type": "display_data", "data": {"application/vnd.vegalite.v5+json": spec, "text/plain": "chart"}}]}}
    panel = {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_o"]}}
    nb.metadata["widgets"] = {book.WIDGET_STATE: {"state": {"o": out_widget, "x": panel}, "version_major": 2}}
    out = book.offline(nb)
    data = out.cells[1].outputs[0]["data"]
    assert data["image/svg+xml"].startswith("<svg") and not any("vegalite" in m for m in data)
    saved = out.metadata["widgets"][book.WIDGET_STATE]["state"]["o"]["state"]["outputs"][0]["data"]
    assert saved["image/svg+xml"].startswith("<svg"), "the panel's chart, inside the Output widget's saved state"
    assert out.cells[1].outputs[-1]["data"]["text/markdown"] == book.PANEL_NOTE  # the panel says where it works
    assert "application/vnd.vegalite.v5+json" in nb.cells[1].outputs[0]["data"]  # the executed copy keeps its spec


def test_the_start_page_lists_chapters_labs_and_the_workshop_from_the_registry():
    from helpers import registry
    chapters = book.order(registry.chapters())
    page = book.index_page(chapters, "Executed on a test machine", {chapters[0]["path"]: "skipped: needs a GPU"})
    for caption in ("Chapters", "Labs", "Workshop"):
        assert f":caption: {caption}" in page
    for ch in chapters:
        assert ch["path"].relative_to(book.ROOT).with_suffix("").as_posix() in page
    assert "Not executed in this build" in page and "needs a GPU" in page
    assert page.index("notebooks/04a_") < page.index("notebooks/04b_") < page.index("labs/lab01_")


def test_a_smoke_book_after_a_test_run_reads_its_rows_in_its_layout(tmp_path, monkeypatch):
    """The test run stores its rows in the merged layout, whose keys a book in vLLM's layout never matches:
    a smoke-size book on such a store executes in the merged layout; otherwise, and when the layout or the
    full size is asked for, it does not."""
    from helpers import run_size
    from helpers.config import EngineConfig
    from helpers.experiment import base_row
    from helpers.load import Load
    from helpers.results import ResultStore

    monkeypatch.setenv("GUIDE_RESULTS", str(tmp_path))
    monkeypatch.setattr(run_size, "_size", "smoke")
    monkeypatch.delenv("GUIDE_ENGINE_LAYOUT", raising=False)
    assert book.layout_of_test_rows() is None  # nothing stored
    for n in (4, 8):
        ResultStore().append({**base_row(EngineConfig(), Load(num_prompts=n), "t", "load"), "engine_layout": "merged"})
    assert book.layout_of_test_rows() == "merged"
    monkeypatch.setenv("GUIDE_ENGINE_LAYOUT", "vllm")
    assert book.layout_of_test_rows() is None
    monkeypatch.delenv("GUIDE_ENGINE_LAYOUT")
    monkeypatch.setattr(run_size, "_size", "full")
    assert book.layout_of_test_rows() is None
