"""Altair chart builders with one look: units in axis titles, configuration as colour.

Every builder takes rows measured in this run (a DataFrame from `tables.table`) and
returns a chart; nothing here invents data.
"""
from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

from helpers import config
from helpers.i18n import N_, tr

WIDTH, HEIGHT = 420, 260
COLOR = "config_label"

def setting_titles() -> dict[str, str]:
    """Axis titles for the settings' columns in result rows: cfg_* (asked) and engine_* (resolved)."""
    titles = {f"cfg_{s.name}": s.title for s in config.SETTINGS}
    titles.update({f"engine_{s.name}": f"{s.name}, engine's value" + (f" ({s.unit})" if s.unit else "")
                   for s in config.SETTINGS if s.resolved})
    return titles


# Axis titles with units, for the columns the harness writes.
TITLES = {
    "mean_e2el_ms": N_("mean request latency (ms)"),
    "mean_ttft_ms": N_("mean TTFT (ms)"), "median_ttft_ms": N_("median TTFT (ms)"), "p99_ttft_ms": N_("P99 TTFT (ms)"),
    "mean_tpot_ms": N_("mean TPOT (ms/token)"), "p99_tpot_ms": N_("P99 TPOT (ms/token)"),
    "median_tpot_ms": N_("median TPOT (ms/token)"), "peak_running": N_("peak running (sequences)"),
    "peak_waiting": N_("peak waiting (requests)"), "prefix_cache_hit_rate_pct": N_("prefix-cache hit rate (%)"),
    "mean_itl_ms": N_("mean ITL (ms)"), "median_itl_ms": N_("median ITL (ms)"), "p99_itl_ms": N_("P99 ITL (ms)"),
    "max_itl_ms": N_("worst ITL (ms)"),
    "short_p99_itl_ms": N_("short requests: P99 ITL (ms)"), "short_max_itl_ms": N_("short requests: worst ITL (ms)"),
    "short_p99_ttft_ms": N_("short requests: P99 TTFT (ms)"), "long_mean_ttft_ms": N_("long prompts: mean TTFT (ms)"),
    "output_throughput": N_("output throughput (tokens/s)"), "request_throughput": N_("request throughput (req/s)"),
    "total_token_throughput": N_("total throughput (tokens/s)"),
    "output_throughput_vllm_rule": N_("output throughput by vLLM's rule (tokens/s)"),
    "kv_cache_tokens": N_("KV cache (tokens)"), "max_concurrency": N_("max concurrency (sequences of max_model_len)"),
    "kv_cache_gib": N_("KV cache (GiB)"), "start_seconds": N_("start-up time (s)"),
    "kv_cache_usage_pct": N_("KV cache usage (%)"), "waiting": N_("waiting requests"),
    "running": N_("running requests"),
    "prefix_cache_hit_rate": N_("prefix-cache hit rate (share of prompt tokens)"), "preemptions": N_("preemptions"),
    "checkpoint_gib": N_("checkpoint on disk (GiB)"), "non_kv_gib": N_("non-KV memory (GiB)"),
    "perplexity": N_("perplexity of the reference text (lower is better)"),
    "token_agreement": N_("greedy tokens matching the reference (share)"),
    "roofline_tpot_ms": N_("bandwidth floor of TPOT (ms/token)"), "mbu": N_("MBU (floor ÷ measured TPOT)"),
    "bytes_per_step_mb": N_("bytes one decode step reads (MB)"), "weights_read_mb": N_("weights read per step (MB)"),
    "gap_ms": N_("measured TPOT above the floor (ms/token)"),
    "t_s": N_("time since load start (s)"), "load_max_concurrency": N_("client concurrency (requests in flight)"),
    **setting_titles(),  # cfg_<setting> and engine_<setting>, with units
}


def title(col: str) -> str:
    """An axis title with its unit, in the learner's language where the catalog has it (helpers.i18n)."""
    return tr(TITLES[col]) if col in TITLES else tr(col) if " " in col else col.replace("_", " ")


# JupyterLab renders the Vega-Lite mimetype with its own bundled Vega: no CDN, so charts
# work offline and inside widget Output areas (the HTML renderer would fetch vega from a CDN).
alt.renderers.enable("mimetype")


@alt.theme.register("vllm_guide", enable=True)
def _theme():
    return alt.theme.ThemeConfig({"config": {
                       "view": {"continuousWidth": WIDTH, "continuousHeight": HEIGHT, "stroke": None},
                       "axis": {"labelFontSize": 12, "titleFontSize": 13, "grid": True, "gridOpacity": 0.4},
                       "legend": {"labelFontSize": 12, "titleFontSize": 12, "orient": "bottom",
                                  "labelLimit": 400, "columns": 1},
                       "title": {"fontSize": 15, "anchor": "start"},
                       "range": {"category": {"scheme": "tableau10"}}}})


def _with_interval(df: pd.DataFrame, metric: str) -> pd.DataFrame | None:
    """The frame with each row's 95 % interval of `metric` (`results.intervals.of`: over its repeats, or a
    bootstrap over one run's requests) as `<metric>_lo`/`_hi`/`_covers`, or None where no row has one (one run and no
    request list for the figure: a throughput measured once)."""
    if "runs" not in df:
        return None
    from helpers.results import intervals

    found = [intervals.of(r, metric) for r in df.to_dict("records")]
    if not any(found):
        return None
    out = df.copy()
    out[f"{metric}_lo"] = [iv.lo if iv else None for iv in found]
    out[f"{metric}_hi"] = [iv.hi if iv else None for iv in found]
    out[f"{metric}_covers"] = [iv.covers if iv else "" for iv in found]
    return out


def _interval_rule(df: pd.DataFrame, x: alt.X, metric: str) -> alt.Chart:
    """A black whisker over each row's 95 % interval of the figure, with what it covers in the tooltip."""
    return _chart(df).mark_rule(color="black", strokeWidth=1.5).encode(
        x=x, y=f"{metric}_lo:Q", y2=f"{metric}_hi:Q",
        tooltip=[alt.Tooltip(f"{metric}_lo:Q", format=".1f", title=tr("95 % interval from")),
                 alt.Tooltip(f"{metric}_hi:Q", format=".1f", title=tr("95 % interval to")),
                 alt.Tooltip(f"{metric}_covers:N", title=tr("interval covers"))])


FLOOR = "roofline_tpot_ms"  # chapter 7's floor under every TPOT figure (helpers/results/roofline.py)


def _has_floor(df: pd.DataFrame, metric: str) -> bool:
    return (metric.endswith("tpot_ms") or metric == "median_itl_ms") and FLOOR in df and bool(df[FLOOR].notna().any())


def _floor_tick(df: pd.DataFrame, x: alt.X) -> alt.Chart:
    """A black tick at each configuration's bandwidth floor: no decode step can be faster."""
    return _chart(df).mark_tick(color="black", thickness=3, size=30).encode(
        x=x, y=f"{FLOOR}:Q", tooltip=[alt.Tooltip(f"{FLOOR}:Q", format=".1f", title=tr("bandwidth floor (ms)"))])


def _chart(df: pd.DataFrame) -> alt.Chart:
    """A chart of a table's plain columns: the /metrics series a table keeps for the verdicts
    (`tables.table`) would only bloat the chart's embedded data."""
    return alt.Chart(df.drop(columns=["timeseries", "runs"], errors="ignore"))


def bars(df: pd.DataFrame, metric: str, chart_title: str | None = None, color: str = COLOR,
         x_labels: bool = True) -> alt.Chart:
    """One bar per configuration for one measured figure: the median of its repeats, with a
    whisker over its 95 % interval where its requests or repeats give one (`_with_interval`)."""
    axis = alt.Axis(labelAngle=-20, labelLimit=220) if x_labels else None  # else the legend names them
    x = alt.X(f"{color}:N", title=None, sort=None, axis=axis)
    chart = _chart(df).mark_bar().encode(
        x=x,
        y=alt.Y(f"{metric}:Q", title=title(metric)),
        color=alt.Color(f"{color}:N", title=tr("configuration"), sort=None),
        tooltip=[color, alt.Tooltip(f"{metric}:Q", format=".1f"),
                 *(["load_label:N"] if "load_label" in df else [])],  # rows of a load name it
    )
    notes = []
    if (with_iv := _with_interval(df, metric)) is not None:
        chart = chart + _interval_rule(with_iv, x, metric)
        notes.append(_whisker_note(metric))
    if _has_floor(df, metric):
        chart = chart + _floor_tick(df, x)
        notes.append(tr("black tick: the bandwidth floor (chapter 7)"))
    return chart.properties(title=_heading(tr(chart_title) or title(metric), notes), width=WIDTH, height=HEIGHT)


def _whisker_note(metric: str) -> str:
    """What a whisker shows, and what it cannot: two engine starts differ by the floor (chapter 0)."""
    from helpers import verdicts

    return tr("whiskers: each bar's own interval (95 %, over its requests or repeats); two starts of one configuration "
              "differ by about ×÷{floor}, which no whisker shows").format(
        floor=f"{1 + verdicts.default_noise(metric):.1f}")


def _heading(text: str, notes: list[str]):
    return alt.TitleParams(text, subtitle=notes) if notes else text


def compare(df: pd.DataFrame, metrics: list[str], chart_title: str = "") -> alt.HConcatChart:
    """Side-by-side bars for several figures (e.g. P99 TTFT, P99 ITL, throughput)."""
    return alt.hconcat(*[bars(df, m, x_labels=False).properties(width=200, height=220)
                         for m in metrics]).properties(title=tr(chart_title))


def panel_runs(metrics: list[str], chart_title: str = N_("Your runs"), label_with: str | None = None,
               label_format: str = "{}"):
    """The chart function of a control panel: one bar per run, numbered in run order, for each
    metric. `label_with` adds a row column to each label ("2. budget=256 · mixed"), written with
    `label_format` (e.g. "{:.0f} in flight")."""
    def chart(rows: list[dict]) -> alt.HConcatChart:
        from helpers.tables import numbered
        df = numbered(rows)
        if label_with:
            df["config_label"] = df.config_label + " · " + df[label_with].map(label_format.format)
        return compare(df, metrics, chart_title)
    return chart


def sweep(df: pd.DataFrame, x: str, y: str, color: str = COLOR, chart_title: str | None = None,
          log_x: bool = False) -> alt.Chart:
    """A measured curve: y against the swept setting x, one line per configuration."""
    scale = alt.Scale(type="log", base=2) if log_x else alt.Scale(zero=False)
    xx = alt.X(f"{x}:Q", title=title(x), scale=scale)
    chart = _chart(df).mark_line(point=True).encode(
        x=xx,
        y=alt.Y(f"{y}:Q", title=title(y)),
        color=alt.Color(f"{color}:N", title=None),
        tooltip=[color, alt.Tooltip(f"{x}:Q"), alt.Tooltip(f"{y}:Q", format=".1f")],
    )
    notes = []
    if (with_iv := _with_interval(df, y)) is not None:
        chart = chart + _interval_rule(with_iv, xx, y)
        notes.append(_whisker_note(y))
    if _has_floor(df, y):  # the floor of each configuration, dashed
        chart = chart + _chart(df).mark_line(strokeDash=[4, 4]).encode(
            x=xx, y=f"{FLOOR}:Q", color=alt.Color(f"{color}:N", title=None),
            tooltip=[color, alt.Tooltip(f"{FLOOR}:Q", format=".1f", title=tr("bandwidth floor (ms)"))])
        notes.append(tr("dashed: the bandwidth floor (chapter 7)"))
    return chart.properties(title=_heading(tr(chart_title) or f"{title(y)} vs {title(x)}", notes), width=WIDTH,
                            height=HEIGHT)


def roofline(lines: pd.DataFrame, chart_title: str = "") -> alt.Chart:
    """Measured TPOT against requests in flight with the bandwidth floor and the compute floor of
    the same batch (`helpers.chapters.ch7.sweep_frame`): where the measured line runs above both,
    the time above the floor is the work every step does, slower reads and small-batch arithmetic."""
    names = ["measured mean TPOT", "bandwidth floor", "compute floor"]
    dash = alt.StrokeDash("line:N", title=None, scale=alt.Scale(domain=names, range=[[1, 0], [6, 3], [2, 2]]))
    color = alt.Color("line:N", title=None, scale=alt.Scale(domain=names, range=["#e45756", "#4c78a8", "#f58518"]))
    return alt.Chart(lines).mark_line(point=True).encode(
        x=alt.X("requests in flight:Q", title=tr("client concurrency (requests in flight)"),
                scale=alt.Scale(type="log", base=2)),
        y=alt.Y("ms per token:Q", title=tr("time per output token (ms)")),
        color=color, strokeDash=dash,
        tooltip=["line:N", "requests in flight:Q", alt.Tooltip("sequences in a step:Q", format=".1f"),
                 alt.Tooltip("ms per token:Q", format=".2f")],
    ).properties(title=tr(chart_title) or tr("TPOT against the roofs"), width=WIDTH, height=HEIGHT)


def chain(df: pd.DataFrame, x: str, steps: list[str], chart_title: str = "") -> alt.HConcatChart:
    """How one setting's change ripples: one small panel per downstream figure."""
    panels = [_chart(df).mark_line(point=True).encode(
        x=alt.X(f"{x}:Q", title=title(x), scale=alt.Scale(zero=False)),
        y=alt.Y(f"{s}:Q", title=title(s), scale=alt.Scale(zero=False)),
        tooltip=[alt.Tooltip(f"{x}:Q"), alt.Tooltip(f"{s}:Q", format=".1f")],
    ).properties(width=180, height=180, title=f"→ {title(s).split(' (sequences')[0]}") for s in steps]
    return alt.hconcat(*panels).properties(title=tr(chart_title))


def timeseries(ts: pd.DataFrame, y: str = "kv_cache_usage_pct", color: str = COLOR,
               chart_title: str | None = None) -> alt.Chart:
    """A /metrics gauge sampled during a run (KV usage, waiting, running)."""
    return alt.Chart(ts).mark_line(interpolate="step-after").encode(
        x=alt.X("t_s:Q", title=title("t_s")),
        y=alt.Y(f"{y}:Q", title=title(y)),
        color=alt.Color(f"{color}:N", title=None),
        tooltip=[color, "t_s", y],
    ).properties(title=tr(chart_title) or tr("{title} during the run", title=title(y)), width=WIDTH, height=HEIGHT)


def save(chart: alt.TopLevelMixin, path: str | Path) -> Path:
    """Write a chart as PNG or SVG (vl-convert, no browser needed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    chart.save(str(path))
    return path


def requests(row: dict, max_ttft_ms: float, max_tpot_ms: float, chart_title: str = "") -> alt.LayerChart:
    """One point per request of a row's first repeat: its TTFT against its TPOT, with the
    latency targets drawn as lines, so the requests that count towards goodput (lower left)
    are visible."""
    run = (row.get("runs") or [row])[0]
    df = pd.DataFrame({"request_ttft_ms": run.get("request_ttft_ms") or [],
                       "request_tpot_ms": run.get("request_tpot_ms") or []})
    df["within target"] = (df.request_ttft_ms <= max_ttft_ms) & (df.request_tpot_ms <= max_tpot_ms)
    points = _chart(df).mark_circle(size=70).encode(
        x=alt.X("request_ttft_ms:Q", title=tr("this request's TTFT (ms)")),
        y=alt.Y("request_tpot_ms:Q", title=tr("this request's TPOT (ms/token)")),
        color=alt.Color("within target:N", scale=alt.Scale(domain=[True, False], range=["#4c78a8", "#e45756"])),
        tooltip=["request_ttft_ms", "request_tpot_ms"])
    ttft = alt.Chart(pd.DataFrame({"x": [max_ttft_ms]})).mark_rule(strokeDash=[4, 4]).encode(x="x:Q")
    tpot = alt.Chart(pd.DataFrame({"y": [max_tpot_ms]})).mark_rule(strokeDash=[4, 4]).encode(y="y:Q")
    repeats = len(row.get("runs") or [row])
    where = tr(" (first repeat of {repeats})", repeats=repeats) if repeats > 1 else ""
    return (points + ttft + tpot).properties(
        title=(tr(chart_title) or tr("Each request against the latency targets (dashed)")) + where)


def tradeoff(df: pd.DataFrame, x: str, y: str, label: str = COLOR, chart_title: str | None = None) -> alt.Chart:
    """One labelled point per configuration, two measured figures against each other, so
    what a setting buys on one axis and costs on the other shows at a glance."""
    base = _chart(df).encode(
        x=alt.X(f"{x}:Q", title=title(x), scale=alt.Scale(zero=True)),
        y=alt.Y(f"{y}:Q", title=title(y), scale=alt.Scale(zero=True)),
        tooltip=[label, alt.Tooltip(f"{x}:Q", format=".0f"), alt.Tooltip(f"{y}:Q", format=".0f")])
    points = base.mark_point(filled=True, size=90).encode(color=alt.Color(f"{label}:N", title=None, sort=None))
    names = base.mark_text(align="left", dx=8, dy=-6, fontSize=12).encode(text=f"{label}:N")
    return (points + names).properties(title=tr(chart_title) or f"{title(y)} vs {title(x)}", width=WIDTH, height=HEIGHT)


def catch_up(lines: pd.DataFrame, chart_title: str = N_("Start time plus serving time")) -> alt.FacetChart:
    """Time since start against output tokens served, one line per engine, one panel per
    concurrency: where the lines cross, the slower-starting engine has caught up."""
    return alt.Chart(lines).mark_line().encode(
        x=alt.X("output_tokens:Q", title=tr("output tokens served (tokens)")),
        y=alt.Y("seconds:Q", title=tr("time since start (s)")),
        color=alt.Color("engine:N", title=None),
        tooltip=["engine:N", alt.Tooltip("output_tokens:Q", format=",.0f"), alt.Tooltip("seconds:Q", format=".1f")],
    ).properties(width=220, height=200).facet(
        column=alt.Column("concurrency:N", title=None)).properties(title=tr(chart_title))


def room(r: pd.DataFrame, metric: str, chart_title: str | None = None) -> alt.FacetChart:
    """Your machine against the room (`results.workshop.ratios`): one panel per experiment, one
    line per configuration. The grey bar spans the room's ratios to each machine's own
    baseline, the tick is the room's median, each point a machine coloured by its fingerprint,
    and yours is the large ringed one."""
    r = r.assign(who=r["you"].map({True: "you", False: "the room"}))
    y = alt.Y("config_label:N", title=None, sort=None, axis=alt.Axis(labelLimit=260))
    x_title = tr("{title} ÷ the same machine's baseline", title=title(metric))
    rng = alt.Chart().mark_rule(color="#bbbbbb", strokeWidth=8, opacity=0.7).encode(
        y=y, x=alt.X("min(ratio):Q", title=x_title, scale=alt.Scale(zero=False)), x2="max(ratio):Q")
    median = alt.Chart().mark_tick(color="black", thickness=2, size=18).encode(y=y, x="median(ratio):Q")
    points = alt.Chart().mark_point(filled=False, strokeWidth=2).encode(
        y=y, x="ratio:Q",
        color=alt.Color("machine:N", title="machine"),
        size=alt.Size("who:N", scale=alt.Scale(domain=["you", "the room"], range=[260, 60]), title=None),
        shape=alt.Shape("who:N", scale=alt.Scale(domain=["you", "the room"], range=["circle", "diamond"]), title=None),
        tooltip=["machine:N", "config_label:N", alt.Tooltip("value:Q", format=".1f", title=metric),
                 alt.Tooltip("ratio:Q", format=".2f"), "baseline:N"])
    return alt.layer(rng, median, points, data=r).properties(width=WIDTH, height=alt.Step(26)).facet(
        row=alt.Row("experiment:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left", labelLimit=500)),
    ).resolve_scale(y="independent").properties(
        title=tr(chart_title) or tr("{title}: each machine against its own baseline, and the room's spread",
                                    title=title(metric)))


def knee(rows: list[dict], slo, best_rate: float | None, chart_title: str = "") -> alt.HConcatChart:
    """Latency percentiles against the offered request rate, the target as a dashed line and
    the knee (the highest rate that met the target) as a vertical rule."""
    from helpers.results.rows import over_saturated, queue_unread

    unread = {id(r): queue_unread(r) for r in rows}
    state = {id(r): (NO_TIMELINE if unread[id(r)] == "no timeline" else FEW) if unread[id(r)] else
             {True: OVER, False: N_("steady"), None: N_("cannot tell")}[over_saturated(r)] for r in rows}
    long = pd.DataFrame([{"offered rate (req/s)": r["load_request_rate"], "percentile": tr(p), "figure": f,
                          "ms": r[f"{k}_{f}_ms"], "queue": tr(state[id(r)])}
                         for r in rows for k, p in (("median", N_("median")), ("p99", "P99")) for f in ("ttft", "tpot")
                         if r.get(f"{k}_{f}_ms") is not None])
    panels = []
    for fig, limit, label in (("ttft", slo.ttft_ms, tr("TTFT (ms)")), ("tpot", slo.tpot_ms, tr("TPOT (ms/token)"))):
        d = long[long.figure == fig]
        x = alt.X("offered rate (req/s):Q", title=tr("offered rate (requests/s, Poisson arrivals)"))
        base = alt.Chart(d).encode(x=x, y=alt.Y("ms:Q", title=label), color=alt.Color("percentile:N",
                                                                                      title=tr("percentile")))
        line = base.mark_line() + base.mark_point(size=60, filled=True).encode(
            shape=alt.Shape("queue:N", title=tr("queue while sending (first repeat)"), scale=alt.Scale(
                domain=[tr(s) for s in ("steady", OVER, "cannot tell", FEW, NO_TIMELINE)],
                range=["circle", "triangle-up", "square", "diamond", "cross"])),
            tooltip=["offered rate (req/s):Q", "percentile:N", alt.Tooltip("ms:Q", format=".1f"), "queue:N"])
        target = alt.Chart(pd.DataFrame({"ms": [limit]})).mark_rule(strokeDash=[6, 4], color="firebrick").encode(
            y="ms:Q")
        layer = line + target
        if best_rate is not None:
            layer += alt.Chart(pd.DataFrame({"offered rate (req/s)": [best_rate]})).mark_rule(color="gray").encode(x=x)
        met = [r for r in rows if slo.meets(r)]
        rule = (tr("no rate met the target") if best_rate is None and not met else
                tr("no knee: the lowest rate missed") if best_rate is None else
                tr("highest rate tried (every rate met it) grey") if len(met) == len(rows) else tr("knee grey"))
        panels.append(layer.properties(width=300, height=240, title=tr("{label}: target dashed, {rule}", label=label,
                                                                       rule=rule)))
    note = (tr(" (▲ looked over-saturated: the queue grew while requests were sent, so those latencies are likely "
               "not a steady state)") if OVER in state.values() else "")
    return alt.hconcat(*panels).properties(title=(tr(chart_title) or tr("Latency against the offered rate")) + note)


OVER, FEW, NO_TIMELINE = N_("over-saturated"), N_("too few requests, or far past capacity"), N_("no timeline")


def tuning_path(records: list[dict], slo, chart_title: str = N_("Goodput at the target after each step")) -> alt.Chart:
    """One bar per tuning step, coloured by its effect; kept steps carry the next ones."""
    df = pd.DataFrame([{"step": f"{i}. {r['step']}", "goodput (req/s)": slo.goodput(r["row"]) or 0.0,
                        "effect": tr(r["effect"] or "baseline"), "kept": tr("kept") if r["kept"] else tr("dropped")}
                       for i, r in enumerate(records)])
    colors = alt.Scale(domain=[tr(e) for e in ("baseline", "helped", "within noise", "hurt")],
                       range=["#4c78a8", "#54a24b", "#bab0ac", "#e45756"])
    return _chart(df).mark_bar().encode(
        x=alt.X("step:N", sort=None, title=None, axis=alt.Axis(labelAngle=-20, labelLimit=220)),
        y=alt.Y("goodput (req/s):Q", title=tr("goodput at the target (requests/s that met it)")),
        color=alt.Color("effect:N", scale=colors, title=tr("effect against the best so far")),
        tooltip=["step:N", alt.Tooltip("goodput (req/s):Q", format=".2f"), "effect:N", "kept:N"],
    ).properties(title=tr(chart_title), width=WIDTH, height=HEIGHT)


def timeline(row: dict, chart_title: str = "") -> alt.VConcatChart:
    """Inside one run: a bar per request (sent → first token, then first → last token), and under it,
    on the same time axis, what the server reported (/metrics: running and waiting requests, KV cache
    used, preemptions and prefix-cache hits where they changed). Drag across a lower panel to zoom the
    bars onto that stretch. From the row's first repeat; nothing is drawn without a measured row."""
    from helpers import tables

    bars, server = tables.timeline(row), tables.server_view(row)
    if bars.empty:  # said on the chart, so a notebook of stored rows still runs
        why = (tr("{value}: this row keeps no timeline (measured before timelines were stored, or read from a file "
                  "without --save-detailed). Measure it again with force=True to see one.",
                  value=row.get('config_label')))
        return alt.vconcat(alt.Chart(pd.DataFrame({"why": [why]})).mark_text(align="left", lineBreak=". ").encode(
            text="why:N").properties(width=WIDTH, height=60, title=tr(chart_title) or tr("No timeline")))
    if not server.empty:  # running and waiting always (a flat 0 is a finding), the rest where they moved
        moved = server.groupby("series")["value"].agg(lambda v: v.max() > v.min())
        server = server.loc[server["series"].map(moved) | server["series"].isin(["requests running",
                                                                                  "requests waiting"])]
    t_axis = alt.Axis(title=tr("time since the run's first /metrics sample (s)") if row.get("timeseries")
                      else tr("time since the first request was sent (s)"))
    brush = alt.selection_interval(encodings=["x"]) if not server.empty else None
    repeats = len(row.get("runs") or [row])
    first = tr(" (the first of {repeats} repeats)", repeats=repeats) if repeats > 1 else ""
    top = _request_bars(bars, t_axis, brush, (tr(chart_title) or tr("Each request: waiting for its first token, "
                                                                     "then decoding")) + first)
    if brush is None:  # no /metrics samples (an imported file): zoom the bars by scrolling instead
        return alt.vconcat(top.interactive(bind_y=False))
    lower = []
    for series, height in ((["requests running", "requests waiting"], 110), (["KV cache used (%)"], 80),
                           (["preemptions (count so far)"], 60), (["prefix-cache hits (tokens so far)"], 60)):
        part = server.loc[server["series"].isin(series)]
        part = part.assign(series=part["series"].map(tr))  # chosen by the English names, shown translated
        if not part.empty:
            lower.append(alt.Chart(part).mark_line(interpolate="step-after", clip=True).encode(
                x=alt.X("t_s:Q", axis=t_axis, scale=alt.Scale(domain=[0, float(bars["end_s"].max())], nice=False)),
                y=alt.Y("value:Q", title=tr(series[0]) if len(series) == 1 else tr("count")),
                color=alt.Color("series:N", title=tr("the server's /metrics")),
                tooltip=["series", "t_s", "value"],
            ).properties(width=WIDTH, height=height).add_params(brush))
    return alt.vconcat(top, *lower).resolve_scale(color="independent")


def _request_bars(bars: pd.DataFrame, t_axis: alt.Axis, zoom, chart_title: str) -> alt.Chart:
    """The timeline's bars: one line per request in the order sent, red while it waits for its first
    token, blue while it decodes; outlined where the load mixed two kinds of request."""
    from helpers import tables

    many = int(bars["request"].max())
    kinds = bool(bars["kind"].nunique() > 1)
    bars = bars.assign(phase=bars["phase"].map(tr))  # the two phases in the learner's language
    return alt.Chart(bars).mark_bar().encode(
        # unzoomed, the same span as the panels under it: from 0, unrounded, to the last token
        x=alt.X("start_s:Q", axis=t_axis, scale=alt.Scale(domain=zoom, nice=False, zero=True) if zoom is not None
                else alt.Scale(nice=False, zero=True)),
        x2="end_s:Q",
        y=alt.Y("request:O", title=tr("request, in the order sent"), axis=alt.Axis(labels=many <= 40)),
        color=alt.Color("phase:N", title=None, scale=alt.Scale(domain=[tr(tables.WAITING), tr(tables.DECODING)],
                                                             range=["#e45756", "#4c78a8"])),
        stroke=alt.Stroke("kind:N", title=tr("outlined: long prompts"), scale=alt.Scale(
            domain=["short", "long"], range=["#ffffff00", "black"]), legend=None) if kinds else alt.value(None),
        tooltip=["request", "kind", "phase", alt.Tooltip("ttft_ms:Q", title=tr("TTFT (ms)"), format=".0f"),
                 alt.Tooltip("e2el_ms:Q", title=tr("latency (ms)"), format=".0f"),
                 alt.Tooltip("max_itl_ms:Q", title=tr("longest gap (ms)"), format=".0f")],
    ).properties(width=WIDTH, height=max(120, min(300, 8 * many)),
                 title=tr(chart_title) or tr("Each request: waiting for its first token, then decoding"))


def pareto(rows: dict[str, dict], tpot_limit_ms: float | None = None, marked: str | None = None,
           chart_title: str = "") -> alt.LayerChart:
    """The named rows as output tokens/s for one user against tokens/s in all (`tables.per_user`), the
    Pareto front joined by a line, the TPOT target as the speed it promises one user (a dashed line:
    points left of it miss it at the median), and one configuration ringed."""
    from helpers import tables

    points = tables.per_user(rows)
    x = alt.X("tokens/s per user:Q", title=tr("output tokens/s one user sees (1000 ÷ median TPOT)"),
              scale=alt.Scale(zero=False))
    y = alt.Y("total output tokens/s:Q", title=tr("output tokens/s in all (throughput)"), scale=alt.Scale(zero=False))
    dots = alt.Chart(points).mark_point(size=90, filled=True).encode(
        x=x, y=y, color=alt.Color("on the front:N", scale=alt.Scale(domain=[True, False],
                                                                    range=["#4c78a8", "#bab0ac"])),
        tooltip=["config", alt.Tooltip("tokens/s per user:Q", format=".1f"),
                 alt.Tooltip("total output tokens/s:Q", format=".1f"), "on the front"])
    front = alt.Chart(points.loc[points["on the front"]]).mark_line(color="#4c78a8").encode(
        x=x, y=y, order="tokens/s per user:Q")
    names = alt.Chart(points).mark_text(align="left", dx=8, fontSize=11).encode(x=x, y=y, text="config")
    layer = front + dots + names
    if tpot_limit_ms:
        layer += alt.Chart(pd.DataFrame({"tokens/s per user": [1000 / tpot_limit_ms]})).mark_rule(
            strokeDash=[6, 4], color="firebrick").encode(x="tokens/s per user:Q")
    if marked is not None and (points["config"] == marked).any():
        layer += alt.Chart(points.loc[points["config"] == marked]).mark_point(
            size=400, color="black", strokeWidth=2).encode(x=x, y=y)
    return layer.properties(width=WIDTH, height=HEIGHT, title=tr(chart_title) or (
        tr("Each configuration: one user's speed against the server's") + (tr(", tuned ringed") if marked else "")))
