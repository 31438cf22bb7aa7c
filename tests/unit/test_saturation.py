"""Over-saturation (helpers/results/rows.py: over_saturated; helpers/charts.py: knee marks it): a rate-sweep
point whose queue was still growing when the last request was sent is named, and a steady one is not."""
import random

import vl_convert as vlc

from helpers import charts
from helpers.results.rows import over_saturated
from helpers.slo import SLO


def _row(rate: float, grow_per_s: float, capacity: float = 3.0, seconds: int = 20, seed: int = 0) -> dict:
    """Requests sent once a second for `seconds`, each in the engine about two seconds; the engine serves
    `capacity` at once, with a request more or less from sample to sample, and the rest queue at
    `grow_per_s` more each second (0: no queue at all)."""
    rng = random.Random(seed)
    series = []
    for i in range(2 * seconds + 6):  # samples every half second, a little past the last request
        t = 0.5 * i
        running = max(0.0, min(capacity, t) + (rng.choice([-1, 0, 1]) if t > 3 else 0))
        waiting = max(0.0, grow_per_s * (t - 2)) if grow_per_s else 0.0
        series.append({"t_s": t, "running": running, "waiting": waiting, "kv_cache_usage_pct": 10.0})
    starts = [0.2 + i for i in range(seconds)]
    return {"load_request_rate": rate, "timeseries": series, "request_start_s": starts, "config_label": f"{rate}",
            "request_e2el_ms": [2000.0] * seconds, "request_ttft_ms": [100.0] * seconds,
            "median_ttft_ms": 100 * rate, "p99_ttft_ms": 200 * rate, "median_tpot_ms": 20.0, "p99_tpot_ms": 30.0}


def _poisson(rate: float, seed: int, requests: int = 32, busy_s: float = 0.9, every_s: float = 0.52) -> dict:
    """The fresh reader's case: Poisson arrivals, each request in the engine a fixed 0.9 s ± 20 %, nothing ever
    waiting. The requests in the engine move by chance alone; no queue grows."""
    rng = random.Random(seed)
    t, starts, ends = 0.3, [], []
    for _ in range(requests):
        t += rng.expovariate(rate)
        starts.append(t)
        ends.append(t + busy_s * rng.uniform(0.8, 1.2))
    series = [{"t_s": k * every_s, "running": float(sum(a <= k * every_s < b for a, b in zip(starts, ends))),
               "waiting": 0.0} for k in range(int(max(ends) / every_s) + 2)]
    return {"load_request_rate": rate, "timeseries": series, "request_start_s": starts,
            "request_e2el_ms": [1000 * (b - a) for a, b in zip(starts, ends)]}


def test_a_growing_queue_is_over_saturated_and_a_steady_one_is_not():
    assert over_saturated(_row(4.0, grow_per_s=0.8)) is True
    assert over_saturated(_row(1.0, grow_per_s=0.0)) is False
    # the reader's counter-case: chance alone moves the requests in an engine with no queue; never over-saturated
    said = [over_saturated(_poisson(rate, seed)) for rate in (1.1, 2.2, 4.4) for seed in range(100)]
    assert True not in said and False in said, "steady where it can tell, never over-saturated"
    assert over_saturated({**_row(1.0, 0.0), "request_start_s": None}) is None, "no timeline: cannot tell"
    assert over_saturated({**_row(1.0, 0.0), "request_start_s": [0.2, 1.2]}) is None, "too few samples while sending"


def test_a_sweep_marks_its_last_points_and_a_steady_sweep_marks_none():
    sweep = [_row(1.0, 0.0), _row(2.0, 0.0), _row(3.0, 0.6), _row(4.0, 1.2)]
    assert [over_saturated(r) for r in sweep] == [False, False, True, True]
    spec = charts.knee(sweep, SLO(500, 50), best_rate=2.0).to_dict()
    assert "over-saturated" in str(spec["title"]) and vlc.vegalite_to_svg(spec).startswith("<svg")
    steady = [_row(r, 0.0) for r in (1.0, 2.0, 3.0)]
    assert not any(over_saturated(r) for r in steady)
    assert "over-saturated" not in str(charts.knee(steady, SLO(500, 50), best_rate=3.0).to_dict().get("title"))


def test_inside_the_busiest_rate_says_over_saturated_or_steady_from_the_samples():
    from helpers.chapters import ch6a
    growing, steady = _row(4.0, grow_per_s=1.0), _row(1.0, grow_per_s=0.0)
    for row in (growing, steady):
        row["request_ttft_ms"] = [100.0 * (i + 1) if row is growing else 100.0 for i in range(20)]
    assert ch6a.busiest([steady, growing]) is growing
    said = ch6a.inside_the_busiest(growing)
    assert "**over-saturated**" in said and "the last quarter 1800 ms: ×6.00: longer" in said
    calm = ch6a.inside_the_busiest(steady)
    assert "steady state" in calm and "over-saturated" not in calm and "within the ±10 % noise" in calm
    falling = ch6a.inside_the_busiest({**growing, "request_ttft_ms": [100.0 * (20 - i) for i in range(20)]})
    assert "**did not hold**" in falling, "waits that fell from first to last: the page's reading is judged"
    assert "keeps no timeline" in ch6a.inside_the_busiest({**steady, "request_start_s": None})


def test_the_pareto_front_holds_the_configurations_no_other_beat_on_both_axes():
    from helpers import tables
    from helpers.chapters import ch6a
    rows = {"baseline": {"output_throughput": 100.0, "median_tpot_ms": 50.0},   # 20 tok/s per user
            "fewer seats": {"output_throughput": 80.0, "median_tpot_ms": 25.0},  # 40
            "worse": {"output_throughput": 70.0, "median_tpot_ms": 50.0},        # beaten by the baseline on both
            "more seats": {"output_throughput": 140.0, "median_tpot_ms": 100.0}}  # 10
    points = tables.per_user(rows).set_index("config")
    assert points["on the front"].to_dict() == {"baseline": True, "fewer seats": True, "worse": False,
                                                "more seats": True}
    said = ch6a.front_sentence(rows, "worse", tpot_limit_ms=30)
    assert "inside the front: baseline, fewer seats did at least as well on both axes" in said
    assert "met by fewer seats." in said
    assert "is on the front" in ch6a.front_sentence(rows, "baseline", tpot_limit_ms=30)
    spec = charts.pareto(rows, 30, marked="worse").to_dict()
    assert vlc.vegalite_to_svg(spec).startswith("<svg")


def test_the_rooms_front_takes_the_experiment_most_pairs_measured_and_names_the_machines(tmp_path):
    import json

    from helpers.chapters import ch90
    from helpers.results import workshop

    def row(machine: str, config: str, tput: float, tpot: float, tag: str = "ch6") -> dict:
        return {"run_id": f"{machine}-{config}-{tag}", "kind": "load", "cfg_model": "embedded", "env_env_id": machine,
                "env_machine_id": machine, "env_cpu_model": f"CPU {machine}", "tag": tag, "time": "2026-12-07T10:00",
                "measurement_version": 7, "env_vllm": "0.32.0", "config_label": config, "engine_location": "local",
                "load_label": "16 requests", "output_throughput": tput, "median_tpot_ms": tpot}
    for m, speed in (("aaaa", 1.0), ("bbbb", 2.0)):
        rows = [row(m, "stock", 100 * speed, 50 / speed), row(m, "fewer seats", 80 * speed, 25 / speed),
                row(m, "other", 90 * speed, 40 / speed, tag="ch1")]
        (tmp_path / f"{m}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    room = workshop.room(tmp_path, me="aaaa")
    experiment, rows = ch90.room_front(room)
    assert experiment == "ch6 · 16 requests" and len(rows) == 4
    said = ch90.front_text(experiment, rows)
    assert "4 points from 2 machine(s)" in said and "from 1 of the 2 machine(s)" in said and "#bbbb" in said
    assert vlc.vegalite_to_svg(charts.pareto(rows).to_dict()).startswith("<svg")
    assert ch90.room_front(workshop.room(tmp_path / "empty")) == (None, {})
