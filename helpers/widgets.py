"""Control panels: a few toggles and a Run button around a plain measuring function.

The notebook calls the same function once with defaults in a normal cell (so nbval runs
the real path); the panel only adds toggles, a Run button, progress, and a chart that
keeps earlier runs beside the new one. Runs happen in a thread so the kernel stays
responsive, and never on a slider move.
"""
from __future__ import annotations

import threading
import time
import traceback
from typing import Callable

import ipywidgets as W

from helpers.errors import ConfigError
from helpers.i18n import tr


class Panel:
    def __init__(self, title: str, controls: dict[str, W.ValueWidget], run: Callable[..., dict],
                 chart: Callable[[list[dict]], object], rows: list[dict] | None = None,
                 summary: Callable[[list[dict]], str] | None = None):
        self.title, self.controls, self.run_fn, self.chart_fn, self.summary_fn = title, controls, run, chart, summary
        self.rows: list[dict] = rows if rows is not None else []
        self.button = W.Button(description=tr("Run"), button_style="primary", icon="play",
                               tooltip=tr("Start (or reuse) an engine with these settings and measure"))
        self.force = W.Checkbox(value=False, description=tr("force re-run (ignore stored results)"), indent=False)
        self.status = W.HTML(self._status_html("ready", f"{len(self.rows)} run(s) shown"))
        self.progress = W.IntProgress(value=0, min=0, max=7, layout=W.Layout(width="260px", visibility="hidden"))
        self.out = W.Output(layout=W.Layout(min_height="120px"))
        self.button.on_click(self._clicked)
        box = W.GridBox(list(controls.values()), layout=W.Layout(grid_template_columns="repeat(2, 380px)"))
        self.widget = W.VBox([W.HTML(f"<h4 style='margin:4px 0'>{title}</h4>"), box,
                              W.HBox([self.button, self.force, self.progress]), self.status, self.out],
                             layout=W.Layout(border="1px solid #ccc", padding="8px"))
        self.widget.add_class("guide-panel")
        self._redraw()

    def _ipython_display_(self):
        """JupyterLab shows the live panel (a widget view outranks every other type in the bundle);
        a static page (the book, nbconvert, GitHub) shows its last chart and a line saying that
        the panel itself is interactive, instead of the widget's Python repr."""
        from IPython.display import display

        from helpers import charts  # noqa: F401 - sets Altair's "mimetype" renderer, which the book converts
        bundle = {}
        if self.rows:
            chart = self.chart_fn(self.rows)
            shown = chart._repr_mimebundle_() if hasattr(chart, "_repr_mimebundle_") else {}
            bundle.update(shown[0] if isinstance(shown, tuple) else shown)
        bundle.update(self.widget._repr_mimebundle_())
        bundle["text/plain"] = self.text_line()
        display(bundle, raw=True)

    def text_line(self) -> str:
        shown = tr("its last chart ({n_rows} run(s))", n_rows=len(self.rows)) if self.rows else tr("no run yet")
        return (tr("Interactive panel “{title}”: its settings and Run button work in JupyterLab; a static page "
                   "shows {shown}.", title=self.title, shown=shown))

    @staticmethod
    def _status_html(state: str, text: str) -> str:
        return tr("<span class='guide-status' data-state='{state}'>{text_value}</span>", state=state, text_value=text)

    def _say(self, state: str, text: str) -> None:
        self.status.value = self._status_html(state, text)

    def _on_stage(self, index: int, name: str, elapsed: float) -> None:
        self.progress.layout.visibility = "visible"
        self.progress.value = index
        self._say("starting", f"starting vLLM: {name} ({elapsed:.0f} s)")

    def _clicked(self, _=None) -> None:
        if self.button.disabled:
            return
        values = {k: engine_value(w) for k, w in self.controls.items()}
        self.button.disabled = True
        self._say("running", "starting…")
        threading.Thread(target=self._work, args=(values, self.force.value), daemon=True).start()

    def _work(self, values: dict, force: bool) -> None:
        t0 = time.monotonic()
        try:
            ticker = _Ticker(lambda s: self._say("running", f"measuring… {s:.0f} s"), t0)
            row = self.run_fn(**values, force=force, progress=self._on_stage_then(ticker))
            ticker.stop()
            self.rows.append(row)
            how = "reused a stored result" if row.get("reused") else f"measured in {time.monotonic() - t0:.0f} s"
            self._redraw()
            self._say("done", f"{how}: {row.get('config_label')} — {len(self.rows)} run(s) shown")
        except ConfigError as e:  # a choice this machine or build cannot run: the reason, not a traceback
            self._say("refused", tr("<b>cannot run here</b> ({setting}): see the reason below", setting=e.setting))
            self.out.append_stdout(str(e) + "\n")
        except Exception as e:  # noqa: BLE001 - shown to the learner, kernel keeps going
            self._say("error", f"<b>failed:</b> {type(e).__name__}")
            self.out.append_stdout(str(e) + "\n")
            self.out.append_stderr("".join(traceback.format_exception_only(type(e), e))[-2000:])
        finally:
            self.progress.layout.visibility = "hidden"
            self.button.disabled = False

    def _on_stage_then(self, ticker: "_Ticker"):
        def cb(index, name, elapsed):
            ticker.pause = index < 7
            self._on_stage(index, name, elapsed)
        return cb

    def _redraw(self) -> None:
        if not self.rows:
            return
        chart = self.chart_fn(self.rows)
        self.out.outputs = ()  # replace the chart (clear_output(wait=True) does not apply from a thread)
        self.out.append_display_data(chart)
        if self.summary_fn:
            from IPython.display import HTML
            self.out.append_display_data(HTML(self.summary_fn(self.rows)))


class _Ticker:
    """Updates the status every second while a load runs (after the engine is up)."""

    def __init__(self, say: Callable[[float], None], t0: float):
        self.say, self.t0, self.pause, self._stop = say, t0, False, threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while not self._stop.wait(1.0):
            if not self.pause:
                self.say(time.monotonic() - self.t0)

    def stop(self):
        self._stop.set()


def toggle(description: str, value: bool) -> W.Checkbox:
    return W.Checkbox(value=value, description=description, indent=False)


ENGINE_DEFAULT = "(engine default)"


def choice(description: str, options, value) -> W.Dropdown:
    """A dropdown. An option whose value is None (leave it to the engine) is held as ENGINE_DEFAULT:
    ipywidgets takes a None value for "nothing selected" and draws an empty box, in JupyterLab and
    in the book alike. `engine_value()` gives None back."""
    def held(v):
        return ENGINE_DEFAULT if v is None else v
    # Every option as a (label, value) pair: ipywidgets reads a list mixing pairs and plain values as
    # values only, and would show the pair itself as a label.
    pairs = [(o[0], held(o[1])) if isinstance(o, tuple) else (str(o), held(o)) for o in options]
    return W.Dropdown(options=pairs, value=held(value), description=description,
                      style={"description_width": "170px"}, layout=W.Layout(width="360px"))


EAGER_LABELS = {True: "eager (no compile)", False: "compiled (longer start)"}


def _named(value) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def setting_options(base, name: str, values=None, keep=()) -> list[tuple[str, object]]:
    """A declared setting's dropdown options as (label, value) pairs, from its declaration
    (helpers/settings.py: `panel` values, vLLM's CPU default): vLLM's default (None) named with what it
    resolves to here, the base config's own value, and of `values` (the declared panel values when None)
    only what runs here beside the base's other settings (`EngineConfig.runs_here`: no fp8 KV cache on an
    AVX2 CPU, no INT4 weights in float32, no 16-token blocks on a CPU). A combination of two changed
    choices that does not work gets the harness's ConfigError when Run is pressed. `keep`: values
    offered whether or not they run here (a control's starting value)."""
    from helpers.config import BY_NAME

    s, own = BY_NAME[name], getattr(base, name)
    declared = s.panel if values is None else tuple(values)
    if name == "gpu_memory_utilization" and values is None and base.device != "cpu":
        # the declared fractions are a CPU's (a share of the node); on a GPU offer more than its default too
        declared = (*declared, base.more_memory(0.4))
    default = s.default_for(base)
    if name == "gpu_memory_utilization":
        pairs, default = [(f"guide default ({base.memory_fraction:g})", None)], base.memory_fraction
    elif s.nullable:
        pairs = [(f"vLLM default ({_named(default)})" if default is not None else "vLLM default", None)]
    else:
        pairs = []
    chosen = [v for v in declared if v not in (own, default)]
    kept = {v for v in (own, *keep) if v is not None and v != default}
    chosen = sorted({*base.runs_here(name, chosen), *kept},
                    key=lambda v: (float(v), 0) if isinstance(v, (int, float)) and not isinstance(v, bool)
                    else (declared.index(v) if v in declared else len(declared), 1))
    return pairs + [(EAGER_LABELS.get(v, _named(v)) if name == "enforce_eager" else _named(v), v)
                    for v in chosen if v != default]


def setting_control(base, name: str, values=None, value=...) -> W.Dropdown:
    """The dropdown for one engine setting, named as the config field it changes (a panel's run
    function receives it under that name: `measuring`, or a home's panel with that parameter), with
    `setting_options`; set to `value`, else to the base's own value (so Run first measures the base)."""
    start = getattr(base, name) if value is ... else value
    return choice(name, setting_options(base, name, values, keep=(start,)), start)


def setting_controls(base, start: dict | None = None, **values) -> dict[str, W.Dropdown]:
    """A panel's controls for several declared settings, keyed by field name, each spelled once:
    `setting_controls(base, max_model_len=[1024, 2048], enable_prefix_caching=None)` (None: the setting's
    declared panel values). `start` sets a control away from the base's own value."""
    return {name: setting_control(base, name, offered, (start or {}).get(name, ...))
            for name, offered in values.items()}


def engine_value(control: W.ValueWidget):
    """A control's value as the engine's settings take it (None for "the engine's default")."""
    v = control.value
    return None if isinstance(v, str) and v == ENGINE_DEFAULT else v


def integer(description: str, value: int, lo: int, hi: int, step: int = 1) -> W.BoundedIntText:
    return W.BoundedIntText(value=value, min=lo, max=hi, step=step, description=description,
                            style={"description_width": "170px"}, layout=W.Layout(width="360px"))


def values(controls: dict[str, W.ValueWidget]) -> dict:
    """The controls' current values, by name: a panel's first run, made in a plain cell."""
    return {name: engine_value(w) for name, w in controls.items()}


def measuring(base, load=None, tag: str = "", presets: dict[str, dict] | None = None) -> Callable[..., dict]:
    """The run function of a panel whose controls are named after EngineConfig fields: Run
    measures `base` with those fields changed, on `load` (its capacity report when load is None).
    A control named `preset` picks one of `presets` (a name → settings), e.g. a parallel split (TP=2).
    A choice this machine cannot run raises ConfigError before a start; the panel shows why."""
    from helpers import experiment

    def run(force: bool = False, progress=True, preset: str | None = None, **settings) -> dict:
        cfg = base.replace(**(presets or {}).get(preset, {}), **settings)
        if load is None:
            return experiment.capacity(cfg, force=force, progress=progress, tag=tag)
        return experiment.measure(cfg, load, force=force, progress=progress, tag=tag)
    return run
