"""Over-saturation (helpers/results/rows.py: over_saturated; helpers/charts.py: knee marks it): a rate-sweep
point whose queue was still growing when the last request was sent is named, and a steady one is not."""
import vl_convert as vlc

from helpers import charts
from helpers.results.rows import over_saturated
from helpers.slo import SLO


def _row(rate: float, grow_per_s: float, capacity: float = 3.0, seconds: int = 20) -> dict:
    """Requests sent once a second for `seconds`; the engine serves `capacity` at once, and the rest
    queue at `grow_per_s` more each second (0: the queue levels off after the ramp)."""
    series = []
    for i in range(2 * seconds + 6):  # samples every half second, a little past the last request
        t = 0.5 * i
        running = min(capacity, t)
        waiting = max(0.0, grow_per_s * (t - 2)) if grow_per_s else (1.0 if t > 2 else 0.0)
        series.append({"t_s": t, "running": running, "waiting": waiting, "kv_cache_usage_pct": 10.0})
    starts = [0.2 + i for i in range(seconds)]
    return {"load_request_rate": rate, "timeseries": series, "request_start_s": starts, "config_label": f"{rate}",
            "median_ttft_ms": 100 * rate, "p99_ttft_ms": 200 * rate, "median_tpot_ms": 20.0, "p99_tpot_ms": 30.0}


def test_a_growing_queue_is_over_saturated_and_a_steady_one_is_not():
    assert over_saturated(_row(4.0, grow_per_s=0.8)) is True
    assert over_saturated(_row(1.0, grow_per_s=0.0)) is False
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
