"""Reading one result row: a setting's value as the engine ran it, and what follows from it.

A row carries each setting twice: `cfg_<name>` (what the guide asked for) and, where the
engine reports it, `engine_<name>` (what it resolved: vLLM's default, its CPU rules). Code that
needs "the value it ran with" asks `setting(row, name)` instead of merging the two itself."""
from __future__ import annotations

import statistics


def setting(row: dict, name: str):
    """The engine's resolved value of a setting where the row has it, else the value asked for
    (None where neither is known, e.g. a GPU default of a row from a server that did not say)."""
    for key in (f"engine_{name}", f"cfg_{name}"):
        if row.get(key) is not None:
            return row[key]
    return None


def kv_bytes_per_number(row: dict) -> int:
    """Bytes one number of KV cache takes in the engine that measured `row`: fp8 KV 1;
    otherwise the compute dtype's (bf16/fp16 2, float32 4)."""
    kv = str(setting(row, "kv_cache_dtype") or "auto")
    if kv.startswith("fp8"):
        return 1
    if kv not in ("auto", "None"):
        return 4 if "float32" in kv else 2
    return 4 if "float32" in str(setting(row, "dtype")) else 2


def kv_bytes_per_token(row: dict) -> float:
    """Bytes of KV cache per token in the engine that measured `row`, from its own report: its KV
    GiB over its KV tokens (per rank, for a tensor-parallel engine)."""
    return row["kv_cache_gib"] * 2**30 / row["kv_cache_tokens"]


def no_collision(*rows) -> str | None:
    """Why a mixed-load comparison tests nothing here, or None: a run (of any repeat) in which the long
    prompts came after every short answer had finished (`workloads.collision`) stalled nobody, so its
    short requests' token gaps say nothing about prefill. Rows measured before the load recorded it: None."""
    for row in rows:
        get = row.get if hasattr(row, "get") else (lambda k, d=None: d)  # noqa: E731
        met = get("shorts_in_flight_at_long_min", get("shorts_in_flight_at_long"))
        if met is not None and met == met and met == 0:
            came = get("long_start_s")
            when = f" at {came:.1f} s" if came is not None and came == came else ""
            return (f"cannot be judged here: in the run of {get('config_label') or 'one configuration'} the long "
                    f"prompts came{when}, after every short answer had finished, so they stalled nobody")
    return None


MIN_SAMPLES = 3  # /metrics readings while requests ran, below which a sampled peak is a draw, not a reading


def too_few_samples(*rows) -> str | None:
    """Why a sampled peak (running, waiting, KV usage) cannot be judged, or None: the first repeat's
    /metrics series (sampled every half second) saw requests running fewer than MIN_SAMPLES times, as on
    a sub-second run (a small model on a GPU). Rows without a series: None (nothing to say)."""
    for row in rows:
        series = row.get("timeseries") if hasattr(row, "get") else None
        if not isinstance(series, list) or not series:
            continue
        seen = sum(1 for x in series if (x.get("running") or 0) > 0)
        if seen < MIN_SAMPLES:
            return (f"cannot be judged here: the run was sampled only {seen} time(s) while requests ran (a run "
                    "shorter than a few /metrics readings), so its peaks are a draw, not a reading")
    return None


def full_while_waiting(row, usage_pct: float) -> int | None:
    """How many of the row's /metrics samples had a request waiting while KV usage was at least
    `usage_pct` (the cache too full to admit it): the peaks alone can come from different moments.
    None where the row keeps no samples."""
    series = row.get("timeseries") if hasattr(row, "get") else None
    if not isinstance(series, list) or not series:
        return None
    return sum(1 for x in series if (x.get("kv_cache_usage_pct") or 0) >= usage_pct and (x.get("waiting") or 0) > 0)


def over_saturated(row) -> bool | None:
    """Whether the engine's queue kept growing while the client sent its requests: arrivals outran the
    engine, so the row's latencies describe a queue that had not stopped growing, not a steady state. Read
    from the first repeat's /metrics samples, from one median request latency after the first send (the
    ramp from an idle engine is over by then) to the last send, as least-squares lines. True: the requests
    *waiting* rise by at least one over that stretch, with the slope two standard errors above zero (the
    requests running alone move by chance with Poisson arrivals, and an engine that admits everything
    never queues). False: the requests in the engine (running + waiting) would rise, even two standard
    errors above their slope, by less than one request or half the number it held on average. None
    otherwise (cannot tell), and where the row keeps no timeline or fewer than six samples in the stretch."""
    series = row.get("timeseries") if hasattr(row, "get") else None
    run = ((row.get("runs") or [row])[0]) if hasattr(row, "get") else {}
    starts, e2els = run.get("request_start_s"), run.get("request_e2el_ms")
    if not isinstance(series, list) or not starts:
        return None
    settled = min(starts) + (statistics.median(e2els) / 1000 if e2els else 0.0)
    stretch = [x for x in series if settled <= x.get("t_s", -1) <= max(starts)]
    if len(stretch) < 6 or stretch[-1]["t_s"] == stretch[0]["t_s"]:
        return None
    span = stretch[-1]["t_s"] - stretch[0]["t_s"]
    queue, _ = _line([(x["t_s"], x.get("waiting") or 0) for x in stretch])
    if queue[0] - 2 * queue[1] > 0 and queue[0] * span >= 1:
        return True
    held, mean = _line([(x["t_s"], (x.get("running") or 0) + (x.get("waiting") or 0)) for x in stretch])
    return False if (held[0] + 2 * held[1]) * span < max(1.0, 0.5 * mean) else None


def _line(points: list[tuple[float, float]]) -> tuple[tuple[float, float], float]:
    """A least-squares line through the points: (slope, its standard error), and the mean of y."""
    n = len(points)
    mt, my = statistics.mean(t for t, _ in points), statistics.mean(y for _, y in points)
    sxx = sum((t - mt) ** 2 for t, _ in points)
    slope = sum((t - mt) * (y - my) for t, y in points) / sxx
    resid = sum((y - my - slope * (t - mt)) ** 2 for t, y in points)
    return (slope, (resid / (n - 2) / sxx) ** 0.5), my


def combine(runs: list[dict]) -> dict:
    """Median of each numeric figure over the repeats, its min and max, and every repeat (a
    measured row's repeats, and an imported sweep's runs of one combination)."""
    out: dict = {"repeats": len(runs), "runs": runs}
    for key in runs[0]:
        values = [r[key] for r in runs]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out[key] = float(statistics.median(values))
            out[f"{key}_min"], out[f"{key}_max"] = float(min(values)), float(max(values))
        else:
            out[key] = next((v for v in values if v is not None), None)  # e.g. the first error text
    return out
