"""The control panel's own logic, without a browser: a click runs the function in a thread,
the new row joins the earlier ones, errors are shown instead of killing the kernel."""
import time

import altair as alt
import pandas as pd

from helpers import widgets


def _wait(panel, state, timeout=10):
    deadline = time.monotonic() + timeout
    while f"data-state='{state}'" not in panel.status.value and time.monotonic() < deadline:
        time.sleep(0.05)
    return f"data-state='{state}'" in panel.status.value


def _chart(rows):
    return alt.Chart(pd.DataFrame(rows)).mark_bar().encode(x="config_label", y="value")


def test_click_runs_in_a_thread_and_adds_a_row():
    calls = []

    def run(chunked=True, force=False, progress=True):
        progress(3, "loading weights", 12.0)  # the engine's start-up stages reach the panel
        calls.append((chunked, force))
        return {"config_label": f"chunked={'on' if chunked else 'off'}", "value": 1.0, "reused": False}

    panel = widgets.Panel("t", {"chunked": widgets.toggle("chunked prefill", True)}, run, _chart,
                          rows=[{"config_label": "first", "value": 2.0}])
    panel.controls["chunked"].value = False
    panel.force.value = True
    panel._clicked()
    assert _wait(panel, "done")
    assert calls == [(False, True)]
    assert len(panel.rows) == 2 and "2 run(s) shown" in panel.status.value and "chunked=off" in panel.status.value
    assert not panel.button.disabled


def test_failure_is_shown_and_the_button_comes_back():
    def run(force=False, progress=True):
        raise ValueError("max_model_len: too short. Try: 4096")

    panel = widgets.Panel("t", {}, run, _chart)
    panel._clicked()
    assert _wait(panel, "error")
    assert "ValueError" in panel.status.value and not panel.button.disabled and panel.rows == []


def test_a_static_page_gets_the_last_chart_and_a_line_not_the_repr(monkeypatch):
    import IPython.display

    from helpers import book

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda data, raw=False: shown.append(data))
    panel = widgets.Panel("Chunked prefill", {"chunked": widgets.toggle("chunked prefill", True)},
                          lambda **kw: {}, _chart, rows=[{"config_label": "first", "value": 2.0}])
    panel._ipython_display_()
    bundle = shown[0]
    assert "application/vnd.jupyter.widget-view+json" in bundle  # JupyterLab: the live panel
    assert "VBox" not in bundle["text/plain"] and "Chunked prefill" in bundle["text/plain"]
    assert any(book.VEGALITE.fullmatch(m) for m in bundle)  # the book renders this one to SVG


def test_a_choice_that_cannot_run_here_shows_the_reason():
    from helpers.config import ConfigError

    def run(force=False, progress=True):
        raise ConfigError("tensor_parallel_size", "(2) must divide the model's 9 attention heads.", "one of [1, 3, 9].")

    panel = widgets.Panel("t", {}, run, _chart, rows=[{"config_label": "first", "value": 2.0}])
    panel._clicked()
    assert _wait(panel, "refused")
    assert "must divide" in panel.out.outputs[-1]["text"] and not panel.button.disabled
