"""Charts show each figure's 95 % interval where its repeats or requests give one, and stay plain where not."""
import pandas as pd

from helpers import charts


def _df(spread: bool) -> pd.DataFrame:
    df = pd.DataFrame({"config_label": ["a", "b"], "output_throughput": [10.0, 12.0], "load_label": ["l", "l"],
                       "load_max_concurrency": [1, 8]})
    if spread:  # three repeats each: the interval is drawn over them
        df["runs"] = [[{"output_throughput": v} for v in (9.0, 10.0, 11.0)],
                      [{"output_throughput": v} for v in (11.0, 12.0, 14.0)]]
    return df


def _marks(chart) -> list[str]:
    marks = [layer.get("mark") for layer in _layers(chart.to_dict())]
    return [m["type"] if isinstance(m, dict) else m for m in marks]


def _layers(spec: dict) -> list[dict]:
    out = []
    for key in ("hconcat", "layer"):
        for sub in spec.get(key, []):
            out += _layers(sub) if ("layer" in sub or "hconcat" in sub) else [sub]
    return out or [spec]


def test_bars_and_sweeps_get_whiskers_from_repeats():
    for chart in (charts.compare(_df(True), ["output_throughput"]),
                  charts.sweep(_df(True), "load_max_concurrency", "output_throughput")):
        assert "rule" in _marks(chart)
        data = [d for v in chart.to_dict()["datasets"].values() for d in v]
        assert all("runs" not in d for d in data)  # the repeats stay out of the chart's data
        assert any(d.get("output_throughput_covers") == "t interval over 3 runs" for d in data)
        # the whisker spans each row's own interval, around its bar
        for d in (d for d in data if d.get("output_throughput_lo") is not None):
            assert d["output_throughput_lo"] <= d["output_throughput"] <= d["output_throughput_hi"]
            assert d["output_throughput_hi"] - d["output_throughput_lo"] > 0
            runs = {10.0: (9.0, 11.0), 12.0: (11.0, 14.0)}[d["output_throughput"]]  # wider than the min–max range
            assert d["output_throughput_lo"] < runs[0] and d["output_throughput_hi"] > runs[1]


def test_single_runs_have_no_whiskers():
    for chart in (charts.compare(_df(False), ["output_throughput"]),
                  charts.sweep(_df(False), "load_max_concurrency", "output_throughput")):
        assert "rule" not in _marks(chart)


def test_requests_chart_marks_the_targets():
    from helpers import charts
    row = {"runs": [{"request_ttft_ms": [100, 900], "request_tpot_ms": [20, 20]}]}
    spec = charts.requests(row, 500, 50).to_dict()
    assert len(spec["layer"]) == 3


def test_tradeoff_labels_each_configuration():
    df = pd.DataFrame({"config_label": ["a", "b"], "short_max_itl_ms": [500.0, 3000.0],
                       "long_mean_ttft_ms": [6000.0, 4000.0]})
    chart = charts.tradeoff(df, "short_max_itl_ms", "long_mean_ttft_ms")
    assert _marks(chart) == ["point", "text"]


def test_tpot_charts_show_the_floor_where_rows_have_one():
    df = _df(False).assign(mean_tpot_ms=[60.0, 80.0], roofline_tpot_ms=[40.0, 42.0])
    assert "tick" in _marks(charts.compare(df, ["mean_tpot_ms"]))
    assert _marks(charts.sweep(df, "load_max_concurrency", "mean_tpot_ms")).count("line") == 2
    plain = df.drop(columns="roofline_tpot_ms")
    assert "tick" not in _marks(charts.compare(plain, ["mean_tpot_ms"]))
    assert "tick" not in _marks(charts.compare(df, ["output_throughput"]))  # only TPOT has a floor


def test_roofline_chart_draws_measured_and_both_floors():
    lines = pd.DataFrame({"requests in flight": [1, 1, 1], "sequences in a step": [1.0] * 3,
                          "line": ["measured mean TPOT", "bandwidth floor", "compute floor"],
                          "ms per token": [90, 60, 5]})
    spec = charts.roofline(lines).to_dict()
    assert spec["encoding"]["strokeDash"]["field"] == "line" and spec["mark"]["type"] == "line"
