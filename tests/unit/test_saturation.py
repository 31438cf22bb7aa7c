"""Over-saturation (helpers/results/rows.py: over_saturated; helpers/charts.py: knee marks it): a rate-sweep
point whose queue was still growing when the last request was sent is named, and a steady one is not."""
import random

import vl_convert as vlc

from helpers import charts
from helpers.results.rows import over_saturated, queue_growth
from helpers.slo import SLO


def _queue(rho: float, requests: int = 32, seed: int = 0, seats: int = 4, service_s: float = 2.0) -> list:
    """A simulated engine of `seats` seats, each request served in about `service_s` s (± 20 %), Poisson arrivals
    at `rho` times its capacity: each request's send time, latency and wait for its first token."""
    rng, t, free, out = random.Random(seed), 0.3, [0.0] * seats, []
    for _ in range(requests):
        t += rng.expovariate(rho * seats / service_s)
        k = min(range(seats), key=lambda i: free[i])
        begin = max(t, free[k])
        free[k] = begin + service_s * rng.uniform(0.8, 1.2)
        out.append((t, free[k] - t, begin - t + 0.1))
    return out


def _row(rho: float, requests: int = 32, seed: int = 0) -> dict:
    sent = _queue(rho, requests, seed)
    series = [{"t_s": 0.5 * k, "running": 1.0, "waiting": 0.0} for k in range(int(max(s + e for s, e, _ in sent) * 2))]
    return {"load_request_rate": round(rho * 2, 2), "timeseries": series, "config_label": f"{rho}",
            "request_start_s": [s for s, _, _ in sent], "request_e2el_ms": [1000 * e for _, e, _ in sent],
            "request_ttft_ms": [1000 * w for _, _, w in sent], "median_ttft_ms": 100.0, "p99_ttft_ms": 200.0,
            "median_tpot_ms": 20.0, "p99_tpot_ms": 30.0}


def test_a_queue_that_grows_is_over_saturated_and_a_light_one_is_not():
    """The rule reads each request's own timeline. Fixed seeds: a load at twice the engine's capacity (128
    requests) is marked over-saturated in most runs; a load at half of it (the readers' stable-queue case) in
    almost none; an engine that admits everything and never queues (the waits do not grow) never."""
    heavy = [over_saturated(_row(2.0, 128, seed)) for seed in range(40)]
    light = [over_saturated(_row(0.5, 128, seed)) for seed in range(40)]
    assert heavy.count(True) > 20 and False not in heavy
    assert light.count(True) <= 1 and light.count(False) > 20
    assert over_saturated({**_row(0.5), "request_start_s": None}) is None, "no timeline: cannot tell"
    assert over_saturated({**_row(0.5, requests=6)}) is None, "too few requests: cannot tell"


def test_a_sweep_marks_its_over_saturated_points_on_the_knee_chart():
    sweep = [_row(0.5, 128, 1), _row(1.0, 128, 1), _row(2.0, 128, 2)]
    marks = [over_saturated(r) for r in sweep]
    assert marks[0] is False and marks[-1] is True
    spec = charts.knee(sweep, SLO(500, 50), best_rate=1.0).to_dict()
    assert "over-saturated" in str(spec["title"]) and vlc.vegalite_to_svg(spec).startswith("<svg")
    steady = [_row(0.5, 128, seed) for seed in (1, 3)]
    assert not any(over_saturated(r) for r in steady)
    assert "over-saturated" not in str(charts.knee(steady, SLO(500, 50), best_rate=3.0).to_dict().get("title"))


def test_inside_the_busiest_rate_says_over_saturated_steady_or_cannot_tell_from_the_requests():
    from helpers.chapters import ch6a
    heavy, light = _row(2.0, 128, 2), _row(0.5, 128, 1)
    assert ch6a.busiest([light, heavy]) is heavy
    q = queue_growth(heavy)
    said = ch6a.inside_the_busiest(heavy)
    assert "**over-saturated**" in said and f"{q['held_at_last_send']} when the last request was sent" in said
    calm = ch6a.inside_the_busiest(light)
    assert "did not grow" in calm and "was not tested here" in calm and "**over-saturated**" not in calm
    assert "reads nothing: too few requests (6) to tell" in ch6a.inside_the_busiest(_row(2.0, requests=6))
    far = next(_row(4.0, 32, seed) for seed in range(40) if queue_growth(_row(4.0, 32, seed)) is None)
    said = ch6a.inside_the_busiest(far)
    assert "far past capacity, which this rule cannot judge" in said and "full size" not in said
    assert "keeps no timeline" in ch6a.inside_the_busiest({**light, "request_start_s": None})


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


def test_one_load_offered_at_several_rates_is_an_experiment_per_rate():
    """Pass 18's W4: a prefix load's label leaves out its rate, so a sweep's rates shared one experiment and the
    room kept whichever rate each machine measured last."""
    import pandas as pd

    from helpers.results import workshop
    df = pd.DataFrame([{"tag": "ch6", "load_label": "prefix 384+64→32 ×8, 2 prefix(es)", "load_request_rate": r,
                        "load_max_concurrency": None} for r in (0.55, 4.4)]
                      + [{"tag": "ch3", "load_label": "random 128→32 ×8 @ conc 1", "load_request_rate": None,
                          "load_max_concurrency": 1}])
    assert list(workshop.experiments(df)) == ["ch6 · prefix 384+64→32 ×8, 2 prefix(es) @ 0.55 req/s",
                                              "ch6 · prefix 384+64→32 ×8, 2 prefix(es) @ 4.4 req/s",
                                              "ch3 · random 128→32 ×8 @ conc 1"]


def test_pass_20_the_knee_chart_names_why_a_point_is_unread_and_when_there_is_no_knee():
    """Pass 20's W1 and W2: a sweep whose lowest rate missed while a higher one met the target has no knee, and the
    chart says so rather than "no rate met the target"; a row without a timeline is marked as that."""
    from helpers.slo import knee
    rows = [_row(0.5, 128, 1), _row(1.0, 128, 1)]
    rows[0] = {**rows[0], "median_ttft_ms": 900.0, "p99_ttft_ms": 900.0, "request_ttft_ms": [900.0] * 128,
               "request_tpot_ms": [20.0] * 128}
    rows[1] = {**rows[1], "request_ttft_ms": [100.0] * 128, "request_tpot_ms": [20.0] * 128}
    target = SLO(500, 50)
    k = knee(rows, target)
    assert k.best_rate is None and k.text(target).startswith("No knee: the lowest rate missed")
    spec = charts.knee(rows, target, k.best_rate).to_dict()
    assert "no knee: the lowest rate missed" in str(spec) and "no rate met the target" not in str(spec)
    bare = charts.knee([{**rows[1], "request_start_s": None}], target, 1.0).to_dict()
    assert "no timeline" in str(bare["hconcat"][0])


def test_the_6a_front_takes_the_sweeps_rates_and_the_paths_steps_once_each():
    from helpers.chapters import ch6a
    sweep = [{"run_id": f"s{r}", "load_request_rate": r, "output_throughput": 40 * r, "median_tpot_ms": 20 + 5 * r}
             for r in (0.5, 1.0, 2.0)]
    path = [{"step": "baseline", "row": sweep[-1]},
            {"step": "seqs=2", "row": {"run_id": "p1", "output_throughput": 70.0, "median_tpot_ms": 15.0}}]
    points, tuned = ch6a.front_points(sweep, path, path[1], 2.0)
    assert list(points) == ["baseline at 0.5 req/s", "baseline at 1 req/s", "baseline at 2 req/s", "seqs=2 at 2 req/s"]
    assert tuned == "seqs=2 at 2 req/s"
    assert ch6a.front_points(sweep, path, path[0], 2.0)[1] == "baseline at 2 req/s"
    said = ch6a.front_sentence(points, tuned, 50)
    assert "The tuned configuration (seqs=2 at 2 req/s) is on the front" in said
    assert "The baseline (the path kept no step)" in ch6a.front_sentence(points, "baseline at 2 req/s", 50)
    assert vlc.vegalite_to_svg(charts.pareto(points, 50, marked=tuned).to_dict()).startswith("<svg")


def test_a_short_run_whose_ramp_outlasted_the_sending_says_too_few_not_far_past_capacity():
    from helpers.results.rows import queue_unread
    # 8 requests sent over 1.6 s; the first ones took 1.4 s (cold prefills): few were sent after that ramp
    starts = [0.2 * i for i in range(8)]
    row = {"request_start_s": starts, "request_e2el_ms": [1400.0] * 8, "request_ttft_ms": [300.0] * 8}
    assert queue_unread(row).startswith("too few requests sent after the ramp")
    long = {"request_start_s": [0.05 * i for i in range(32)], "request_e2el_ms": [5000.0] * 32,
            "request_ttft_ms": [3000.0] * 32}
    assert "far past capacity" in queue_unread(long)
