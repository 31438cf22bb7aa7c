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
    assert any(m.startswith(book.VEGALITE) for m in bundle)  # the book renders this one to SVG


def test_a_choice_that_cannot_run_here_shows_the_reason():
    from helpers.config import ConfigError

    def run(force=False, progress=True):
        raise ConfigError("tensor_parallel_size", "(2) must divide the model's 9 attention heads.", "one of [1, 3, 9].")

    panel = widgets.Panel("t", {}, run, _chart, rows=[{"config_label": "first", "value": 2.0}])
    panel._clicked()
    assert _wait(panel, "refused")
    assert "must divide" in panel.out.outputs[-1]["text"] and not panel.button.disabled


def test_a_settings_panel_measures_the_base_with_its_controls_values(monkeypatch):
    from helpers import experiment
    from helpers.config import EngineConfig
    from helpers.load import Load
    seen = []
    monkeypatch.setattr(experiment, "measure", lambda cfg, load, **kw: seen.append(("measure", cfg, load, kw)) or {})
    monkeypatch.setattr(experiment, "capacity", lambda cfg, **kw: seen.append(("capacity", cfg, None, kw)) or {})
    base, load = EngineConfig(device="cpu"), Load(num_prompts=2)
    controls = {"max_num_seqs": widgets.choice("seats", [2, 8], 8), "enable_prefix_caching": widgets.toggle("c", False)}
    widgets.measuring(base, load, tag="t")(**widgets.values(controls))
    widgets.measuring(base)(max_model_len=1024, force=True)
    widgets.measuring(base, load, presets={"TP=2": {"tensor_parallel_size": 2}})(preset="TP=2")
    assert seen[0][:3] == ("measure", base.replace(max_num_seqs=8, enable_prefix_caching=False), load)
    assert seen[0][3]["tag"] == "t"
    assert seen[1][:2] == ("capacity", base.replace(max_model_len=1024)) and seen[1][3]["force"] is True
    assert seen[2][1].tensor_parallel_size == 2


def test_the_panel_chart_numbers_the_runs_and_adds_a_column_to_each_label():
    from helpers import charts
    rows = [{"config_label": "guide default", "p99_itl_ms": 10.0, "load_max_concurrency": 4.0},
            {"config_label": "guide default", "p99_itl_ms": 12.0, "load_max_concurrency": 16.0}]
    chart = charts.panel_runs(["p99_itl_ms"], label_with="load_max_concurrency", label_format="{:.0f} in flight")(rows)
    labels = list(chart.data["config_label"])  # Altair lifts the shared data to the top
    assert labels == ["1. guide default · 4 in flight", "2. guide default · 16 in flight"]


def test_an_engine_default_choice_shows_its_label_and_reads_back_as_none():
    """ipywidgets takes a None value for "nothing selected" (index None: an empty box); the guide's
    choice holds it as a label of its own, selected, and still hands the engine None."""
    box = widgets.choice("block_size", [("engine default", None), ("32", 32)], None)
    assert box.index == 0 and box.label == "engine default" and widgets.engine_value(box) is None
    box.value = 32
    box.index = 0  # picked again after another choice: still shown, still None
    assert box.label == "engine default" and widgets.values({"block_size": box}) == {"block_size": None}
    mixed = widgets.choice("cap", [("off", None), 128, 256], 256)  # pairs and plain values in one list
    assert widgets.engine_value(mixed) == 256 and mixed.label == "256"
    mixed.index = 0
    assert mixed.label == "off" and widgets.engine_value(mixed) is None
    assert widgets.choice("c", [("a", None), 2], None).label == "a"
    assert widgets.choice("d", [None, 2], None).label == "None"  # a plain None option is held too


def test_a_settings_control_is_spelled_once_from_its_declaration():
    """A panel's control for an engine setting is keyed and labelled by the field it changes, offers vLLM's
    default by what it resolves to here, keeps its starting value, and offers only what runs here."""
    from helpers.config import EngineConfig

    base = EngineConfig()
    controls = widgets.setting_controls(base, start={"max_model_len": 2048}, max_model_len=[1024, 4096],
                                enable_prefix_caching=None, block_size=[16, 32])
    assert [v for _, v in controls["max_model_len"].options] == [1024, 2048, 4096]
    assert controls["max_model_len"].value == 2048 and controls["max_model_len"].description == "max_model_len"
    assert controls["enable_prefix_caching"].options[0][0] == "vLLM default (on)"
    assert widgets.values(controls)["enable_prefix_caching"] is None  # the engine's default, as the config holds it
    offered = [v for _, v in controls["block_size"].options]
    assert 32 in offered and 16 not in offered  # a CPU block must be a multiple of 32 (EngineConfig refuses 16)
