"""Sampling the server's Prometheus `/metrics` page as a time series while a load runs.

What the engine reports about itself (its cache config) is read in helpers/engine/reported.py.
"""
from __future__ import annotations

import threading
import time
import urllib.request

import pandas as pd
from prometheus_client.parser import text_string_to_metric_families

# Gauges and counters the guide charts; counter names without the `_total` suffix, as the
# parser reports them.
TRACKED = {
    "vllm:kv_cache_usage_perc": "kv_cache_usage",
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:prefix_cache_queries": "prefix_cache_queries",
    "vllm:prefix_cache_hits": "prefix_cache_hits",
    "vllm:num_preemptions": "preemptions",
    "vllm:prompt_tokens": "prompt_tokens",
    "vllm:generation_tokens": "generation_tokens",
}


def parse(text: str) -> dict:
    """Tracked values, summed over engines."""
    values: dict = {name: 0.0 for name in TRACKED.values()}
    for family in text_string_to_metric_families(text):
        key = TRACKED.get(family.name)
        if key is None:
            continue
        for s in family.samples:
            if s.name in (family.name, family.name + "_total"):
                values[key] += s.value
    return values


def scrape(base_url: str, timeout: float = 5, headers: dict | None = None) -> dict:
    req = urllib.request.Request(base_url + "/metrics", headers=headers or {})  # a remote server's key, if any
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return parse(r.read().decode())


class MetricsSampler:
    """Samples `/metrics` every `interval` seconds in a thread while a load runs."""

    def __init__(self, base_url: str, interval: float = 0.5, headers: dict | None = None):
        self.base_url, self.interval, self.headers = base_url, interval, headers
        self.rows: list[dict] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "MetricsSampler":
        self.t0 = time.monotonic()  # the samples' t_s count from here
        self._sample()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        self._sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        asked = time.monotonic()  # when the page was asked for; the server renders it a few ms to ~0.1 s later
        try:
            v = scrape(self.base_url, timeout=2, headers=self.headers)
        except Exception:  # a refused, cut or garbled page: skip this sample, never the measurement  # noqa: BLE001
            return
        v["t_s"] = round(asked - self.t0, 3)
        self.rows.append(v)

    def frame(self) -> pd.DataFrame:
        """Time series; counters are turned into increases since the start of the run."""
        df = pd.DataFrame(self.rows)
        if df.empty:
            return df
        for col in ("prefix_cache_queries", "prefix_cache_hits", "preemptions", "prompt_tokens", "generation_tokens"):
            df[col] = df[col] - df[col].iloc[0]
        df["kv_cache_usage_pct"] = 100 * df.pop("kv_cache_usage")
        return df

    def totals(self) -> dict:
        """Per-run summary: counter increases and peaks of the gauges."""
        df = self.frame()
        if df.empty:
            return {}
        q, h = float(df["prefix_cache_queries"].iloc[-1]), float(df["prefix_cache_hits"].iloc[-1])
        return {"prefix_cache_queries": q, "prefix_cache_hits": h,
                "prefix_cache_hit_rate": (h / q) if q else 0.0,
                "preemptions": float(df["preemptions"].iloc[-1]),
                "peak_kv_cache_usage_pct": float(df["kv_cache_usage_pct"].max()),
                "peak_running": float(df["running"].max()), "peak_waiting": float(df["waiting"].max()),
                # sequences in a step, on average while any ran: the batch of the decode roofline
                "mean_running": float(df.loc[df["running"] > 0, "running"].mean()) if (df["running"] > 0).any()
                else 0.0}
