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
    """Whether the requests in the engine (running + waiting, from the first repeat's /metrics samples)
    were still growing when the client sent its last request: arrivals outran the engine for the
    whole run, so its latencies describe a queue that had not stopped growing, not a steady state.
    Growing: the last third of the sending window holds, on average, at least one request and a
    quarter more than its middle third (a ramp-up from an empty engine falls in the first third).
    None where it cannot be told: no timeline, or fewer than six samples while requests were sent."""
    series = row.get("timeseries") if hasattr(row, "get") else None
    run = ((row.get("runs") or [row])[0]) if hasattr(row, "get") else {}
    starts = run.get("request_start_s")
    if not isinstance(series, list) or not starts:
        return None
    first, last = min(starts), max(starts)
    held = [(x["t_s"], (x.get("running") or 0) + (x.get("waiting") or 0)) for x in series
            if first <= x.get("t_s", -1) <= last]
    if len(held) < 6:
        return None
    third = (last - first) / 3
    middle = [n for t, n in held if first + third <= t < first + 2 * third]
    end = [n for t, n in held if t >= first + 2 * third]
    if not middle or not end:
        return None
    grew = statistics.mean(end) - statistics.mean(middle)
    return bool(grew >= max(1.0, 0.25 * statistics.mean(middle)))


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
