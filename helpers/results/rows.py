"""Reading one result row: a setting's value as the engine ran it, and what follows from it.

A row carries each setting twice: `cfg_<name>` (what the guide asked for) and, where the
engine reports it, `engine_<name>` (what it resolved: vLLM's default, its CPU rules). Code that
needs "the value it ran with" asks `setting(row, name)` instead of merging the two itself."""
from __future__ import annotations

import statistics

from helpers.i18n import N_


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


def queue_growth(row) -> dict | None:
    """The first repeat's requests, read exactly from their own timeline (not from the /metrics gauges, which
    lag): the requests in the engine (sent, not yet answered) when the ramp from an idle engine was over (one
    median latency of the first quarter sent after the first send) and when the last request was sent, and
    the median wait for a first token of the first and the second half of the requests sent after the ramp.
    None where it cannot be read (`queue_unread` says why)."""
    return None if queue_unread(row) else _growth(row)


def queue_unread(row) -> str | None:
    """Why `queue_growth` cannot read a row, or None: no timeline, fewer than eight requests, or a ramp (the
    first quarter's median latency) that outlasted almost all the sending: in a run of fewer than 16 requests
    a few cold prefills can do that alone (too few requests after it), in a longer one only a load far past
    capacity does (its first requests already waited long)."""
    run = ((row.get("runs") or [row])[0]) if hasattr(row, "get") else {}
    starts, e2els, ttfts = run.get("request_start_s"), run.get("request_e2el_ms"), run.get("request_ttft_ms")
    if not starts or not e2els or not ttfts:
        return "no timeline"
    if len(starts) < 8:
        return f"too few requests ({len(starts)}) to tell"
    after = sum(s >= _settled(starts, e2els) for s in starts)
    if after < 6 and len(starts) < 16:  # a short run: a few cold prefills alone can outlast its sending
        return f"too few requests sent after the ramp ({after} of {len(starts)}) to tell"
    if after < 6:
        return N_("the first requests' latency outlasted the sending: a load far past capacity, which this rule "
                  "cannot judge")
    return None


def _settled(starts: list, e2els: list) -> float:
    """When the ramp from an idle engine is over: the first send plus the median latency of the first quarter sent."""
    order = sorted(range(len(starts)), key=lambda i: starts[i])
    return min(starts) + statistics.median(e2els[i] for i in order[:max(2, len(order) // 4)]) / 1000


def _growth(row) -> dict:
    run = (row.get("runs") or [row])[0]
    starts, e2els, ttfts = run["request_start_s"], run["request_e2el_ms"], run["request_ttft_ms"]
    order = sorted(range(len(starts)), key=lambda i: starts[i])
    settled = _settled(starts, e2els)
    later = [(starts[i], ttfts[i]) for i in order if starts[i] >= settled]
    held = lambda t: sum(1 for s, e in zip(starts, e2els) if s <= t < s + e / 1000)  # noqa: E731
    half = len(later) // 2
    return {"held_after_ramp": held(later[0][0]), "held_at_last_send": held(later[-1][0]),
            "first_half_wait_ms": statistics.median(t for _, t in later[:half]),
            "second_half_wait_ms": statistics.median(t for _, t in later[half:]), "requests": len(later)}


def over_saturated(row) -> bool | None:
    """Whether arrivals outran the engine while the client sent (`queue_growth`): True when the requests in the
    engine at the last send were at least three times as many as after the ramp, and at least four, and the
    second half of the requests waited at least twice as long for a first token as the first half: its
    latencies describe a queue that kept growing, not a steady state. False when the engine held at most one
    request more at the end and the waits grew by less than half. None in between, or without a timeline.
    A run of a few dozen requests cannot always tell a queue that grows from one that will level off: in a
    simulation of a 4-seat engine with Poisson arrivals, a stable load at 70-85 % of capacity was marked
    over-saturated in 6-18 % of runs (32 or 128 requests), a load at 120-200 % in 22-75 %, and a load just
    past capacity (110-130 %, 32 requests) read as steady in about one run in ten. These figures are for a
    queue that waits for seats; past about twice the capacity the ramp outlasts the sending and the rule says
    it cannot judge. An engine that admits every request (max_num_seqs above the load, as the guide's CPU
    baseline) shows overload as a growing batch and slower steps (TPOT), not as a waiting line whose first
    tokens come later and later: this rule does not read that."""
    q = queue_growth(row)
    if q is None:
        return None
    a, b, w1, w2 = q["held_after_ramp"], q["held_at_last_send"], q["first_half_wait_ms"], q["second_half_wait_ms"]
    if b >= max(4, 3 * a) and w2 >= 2 * w1:
        return True
    if b <= a + 1 and w2 <= 1.5 * w1:
        return False
    return None


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


ONE_CHUNK_SHARE = 0.25  # more streams than this came in one chunk: the pace was not seen


def paced(row) -> dict | None:
    """The row with its median TPOT taken over the streams that showed a pace. vLLM's benchmark gives a
    stream that reached the client in one chunk a TPOT of 0 (`calculate_metrics`: (latency − TTFT) ÷
    (tokens − 1) with no gap between them), and at the smoke size two such streams of four halve a median:
    they are left out here, per repeat. None where more than ONE_CHUNK_SHARE of a repeat's streams came in
    one chunk (the server fell behind: its pace was not seen). A row without per-request lists is returned
    as it is."""
    row = dict(row)
    runs = row.get("runs") if isinstance(row.get("runs"), list) else None
    if not runs or not all(isinstance(r, dict) and r.get("request_tpot_ms") for r in runs):
        return row
    medians, kept = [], []
    for run in runs:
        tpots = [t for t in run["request_tpot_ms"] if t is not None]
        shown = [t for t in tpots if t > 0]
        if not shown or len(tpots) - len(shown) > ONE_CHUNK_SHARE * len(tpots):
            return None
        medians.append(statistics.median(shown))
        kept.append({**run, "request_tpot_ms": shown, "median_tpot_ms": medians[-1]})
    return {**row, "runs": kept, "median_tpot_ms": statistics.median(medians)}
