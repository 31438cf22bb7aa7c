"""A run's timeline (helpers/tables.py: timeline, server_view; helpers/charts.py: timeline), built from vLLM's
own per-request record in a recorded detailed result (tests/data/imports/vllm_bench_detailed.json, written by
`vllm bench serve --save-detailed` against the guide's engine) and checked against that record."""
import json

import pytest
import vl_convert as vlc

from helpers import charts, tables
from helpers.load.workloads import summarize
from tests.unit.import_files import DETAILED


def _row():
    """The recorded result as a measured row's figures, with /metrics samples on the same axis."""
    result = json.loads(DETAILED.read_text())
    figures = summarize(result)
    t0 = min(result["start_times"]) - 0.25  # the sampler started a quarter second before the first request
    figures["request_start_s"] = [round(t - t0, 3) for t in figures["request_start_s"]]
    series = [{"t_s": 0.5 * i, "running": min(4, i), "waiting": max(0, 6 - i), "kv_cache_usage_pct": 3.0 * i,
               "preemptions": 0.0, "prefix_cache_hits": 0.0} for i in range(20)]
    return result, {**figures, "config_label": "recorded", "timeseries": series}


def test_each_bar_is_its_requests_own_record():
    result, row = _row()
    bars = tables.timeline(row)
    done = [i for i, n in enumerate(result["output_lens"]) if n]
    assert len(bars) == 2 * len(done) == 32
    first = min(result["start_times"])
    for i in done:  # every request of the record is one pair of bars, at its own times
        sent = result["start_times"][i] - first + 0.25
        ttft = result["ttfts"][i]
        mine = bars.loc[(bars["ttft_ms"] - 1000 * ttft).abs() < 0.01]  # this request's two bars
        wait, decode = (mine.loc[mine["phase"] == phase].iloc[0] for phase in (tables.WAITING, tables.DECODING))
        assert wait["start_s"] == pytest.approx(sent, abs=0.002)
        assert wait["end_s"] == pytest.approx(sent + ttft, abs=0.002)
        end = sent + ttft + sum(result["itls"][i])
        assert decode["start_s"] == wait["end_s"] and decode["end_s"] == pytest.approx(end, abs=0.002)
    assert list(bars.drop_duplicates("request")["start_s"]) == sorted(bars.drop_duplicates("request")["start_s"])
    longest = max(max(g) for g in result["itls"] if g)
    assert bars["max_itl_ms"].max() == pytest.approx(1000 * longest, abs=0.06)


def test_the_server_view_shares_the_axis_and_the_chart_renders_offline():
    _, row = _row()
    view = tables.server_view(row)
    assert set(view["series"]) == set(tables.SERVER_VIEW.values()) and view["t_s"].min() == 0
    spec = charts.timeline(row).to_dict()
    assert len(spec["vconcat"]) == 3, "bars, running/waiting, KV usage (preemptions and hits never moved)"
    assert vlc.vegalite_to_svg(spec).startswith("<svg")


def test_a_row_without_a_timeline_says_why_and_an_imported_file_draws_without_samples():
    _, row = _row()
    said = charts.timeline({**row, "request_start_s": None}).to_dict()
    assert "keeps no timeline" in json.dumps(said) and vlc.vegalite_to_svg(said).startswith("<svg")
    spec = charts.timeline({**row, "timeseries": None}).to_dict()
    assert len(spec["vconcat"]) == 1 and vlc.vegalite_to_svg(spec).startswith("<svg")


def test_a_mixed_loads_requests_keep_their_kind():
    _, row = _row()
    kinds = ["short"] * 12 + ["long"] * 4
    bars = tables.timeline({**row, "request_kind": kinds})
    assert bars.groupby("kind")["request"].nunique().to_dict() == {"long": 4, "short": 12}


def test_the_chapters_sentences_read_the_timeline_and_say_when_it_is_missing():
    from helpers.chapters import ch2, ch3, ch4a
    _, row = _row()
    # ch2: first tokens before any request finished (admitted at once) against those after (blocks handed back)
    ends = [s + e / 1000 for s, e in zip(row["request_start_s"], row["request_e2el_ms"])]
    early = sum(s + t / 1000 < min(ends) for s, t in zip(row["request_start_s"], row["request_ttft_ms"]))
    said = ch2.inside_the_fill({**row, "preemptions": 2.0, "load_max_concurrency": None})
    assert f"{early} had their first token before any request finished" in said and "2 preemption(s)" in said
    assert f"the other {16 - early} had theirs only after" in said
    assert early == 4, "by hand from the recorded file: the first wave of four (concurrency 4) before any finished"
    at_once = {**row, "request_e2el_ms": [1e6] * 16}  # nobody finished before every first token: all fit
    assert "none had to wait for a request to finish" in ch2.inside_the_fill({**at_once, "load_max_concurrency": None})
    assert "keeps no timeline" in ch2.inside_the_fill({**row, "request_start_s": None})
    # ch4a: the two runs' median waits over every request, and which way they differ
    slow = {**row, "request_ttft_ms": [2 * t for t in row["request_ttft_ms"]]}
    said = ch4a.inside_the_prefixes({ch4a.FIXED: row, ch4a.CHURN: slow})
    assert "×2.00 the fixed prefix's, as the page expects" in said
    assert "about the same" in ch4a.inside_the_prefixes({ch4a.FIXED: row, ch4a.CHURN: row})
    assert "**did not hold**" in ch4a.inside_the_prefixes({ch4a.FIXED: slow, ch4a.CHURN: row})
    # ch3: both halves of the page's reading, each able to say it did not hold
    mixed = {**row, "request_kind": ["short"] * 12 + ["long"] * 4}
    frozen = {**mixed, "request_max_itl_ms": [3 * g for g in row["request_max_itl_ms"]],
              "request_ttft_ms": [t / 2 for t in row["request_ttft_ms"]]}
    said = ch3.inside_the_runs({"budget 256": mixed, "chunking off": frozen}, ("budget 256", "chunking off"))
    assert "longer (×3.00) with chunking off, as the page expects" in said and "longer (×2.00) with budget 256" in said
    said = ch3.inside_the_runs({"budget 256": frozen, "chunking off": mixed}, ("budget 256", "chunking off"))
    assert said.count("**did not hold**") == 2 and "as the page expects" not in said


def test_send_times_move_onto_the_samplers_clock(tmp_path, monkeypatch):
    """The reader's N4: vLLM's client stamps a request's send with time.perf_counter(), the sampler its samples
    with time.monotonic(); on Linux both read CLOCK_MONOTONIC, and measure() subtracts the sampler's start."""
    import time

    from helpers import EngineConfig, Load, experiment
    from helpers.results import ResultStore

    assert time.get_clock_info("perf_counter").implementation == time.get_clock_info("monotonic").implementation

    class FakeServer:
        base_url, model_path, warmed_up = "http://127.0.0.1:9", "/m", True

    class FakeSampler:
        def __init__(self, *a):
            self.t0 = 1000.0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def totals(self):
            return {}

        def frame(self):
            import pandas as pd
            return pd.DataFrame([{"t_s": 0.0, "running": 0.0}])

    monkeypatch.setattr(experiment, "engine_for", lambda cfg, progress=True: FakeServer())
    monkeypatch.setattr(experiment, "reset_prefix_cache", lambda *a: True)
    monkeypatch.setattr(experiment.reported, "read", lambda server: {})
    monkeypatch.setattr(experiment, "MetricsSampler", FakeSampler)
    monkeypatch.setattr(experiment, "run_load", lambda *a, **k: {"completed": 2.0, "request_start_s": [1000.25, 1001.5],
                                                                 "request_ttft_ms": [10.0, 20.0]})
    row = experiment.measure(EngineConfig(), Load(num_prompts=2), store=ResultStore(tmp_path), progress=False)
    assert row["request_start_s"] == [0.25, 1.5], "seconds since the sampler started"


def test_pass_19_the_chapters_sentences_say_when_a_run_cannot_show_the_reading():
    """Pass 19: chapter 3's sentence on runs whose long prompts met no short answer says it cannot be judged, and a
    change within the noise is "this run does not show it", not "did not hold"; chapter 2's on a load the client
    capped says the run cannot show the cache's ceiling."""
    from helpers.chapters import ch2, ch3
    _, row = _row()
    mixed = {**row, "request_kind": ["short"] * 12 + ["long"] * 4}
    alone = {**mixed, "shorts_in_flight_at_long": 0.0, "long_start_s": 9.0}
    said = ch3.inside_the_runs({"a": mixed, "b": alone}, ("a", "b"))
    assert said.startswith("Cannot be judged here") and "did not hold" not in said
    said = ch3.inside_the_runs({"a": mixed, "b": mixed}, ("a", "b"))
    assert said.count("within noise, so this run does not show the page's reading") == 2 and "did not hold" not in said
    assert "cannot show the cache's ceiling" in ch2.inside_the_fill({**row, "load_max_concurrency": 4})
