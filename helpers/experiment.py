"""The flow every measurement takes: config → server (reused while only the load changes)
→ load → one tidy row → the results store.

Notebooks call `measure(config, load)` and `capacity(config)`; both return a stored row
instead of re-running when config, load and environment match, unless `force=True`.
"""
from __future__ import annotations

import time
import uuid

import pandas as pd

from helpers.config import ConfigError, EngineConfig
from helpers.engine import Server, facts
from helpers.load import Load, MetricsSampler, run_load
from helpers.results import ResultStore, fingerprint, result_key

_current: Server | None = None


def engine_for(config: EngineConfig, progress: bool = True) -> Server:
    """The running server for this config; starts one (stopping any other) if needed."""
    global _current
    if _current is not None and _current.running and _current.config == config:
        return _current
    stop()
    server = Server(config, progress=progress)
    server.start()
    _current = server
    return server


def stop() -> None:
    """Stop the server this kernel is running, if any."""
    global _current
    if _current is not None:
        _current.stop()
        _current = None


def _base_row(config: EngineConfig, load: Load | None, tag: str, kind: str) -> dict:
    env = fingerprint()
    cfg = config.as_dict()
    row = {"run_id": uuid.uuid4().hex[:10], "key": result_key(cfg, load.as_dict() if load else None, env["env_id"], kind),
           "kind": kind, "tag": tag, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "config_label": config.label(), "load_label": load.label() if load else None}
    row.update({f"cfg_{k}": v for k, v in cfg.items()})
    if load:
        row.update({f"load_{k}": v for k, v in load.as_dict().items()})
    row.update({f"env_{k}": v for k, v in env.items()})
    return row


def _capacity_fields(server: Server) -> dict:
    return facts.read(server)


def capacity(config: EngineConfig, *, force: bool = False, tag: str = "", store: ResultStore | None = None,
             progress: bool = True) -> dict:
    """Start an engine (or reuse one) and record what it reports about its KV cache."""
    store = store or ResultStore()
    row = _base_row(config, None, tag, "capacity")
    if not force and (old := store.get(row["key"])):
        return {**old, "reused": True}
    server = engine_for(config, progress)
    row.update(_capacity_fields(server))
    store.append(row)
    return {**row, "reused": False}


def measure(config: EngineConfig, load: Load, *, force: bool = False, tag: str = "",
            store: ResultStore | None = None, progress: bool = True, sample_every: float = 0.5) -> dict:
    """Run `load` on an engine for `config`; returns (and stores) one tidy row."""
    store = store or ResultStore()
    if load.longest_prompt() > config.max_model_len:
        raise ConfigError("max_model_len", f"({config.max_model_len}) is shorter than this load's longest "
                          f"request ({load.longest_prompt()} tokens), so the server would reject it.",
                          f"max_model_len >= {load.longest_prompt()}, or a shorter load.")
    row = _base_row(config, load, tag, "load")
    if not force and (old := store.get(row["key"])):
        return {**old, "reused": True}
    server = engine_for(config, progress)
    row.update(_capacity_fields(server))
    with MetricsSampler(server.base_url, sample_every) as sampler:
        figures = run_load(server.base_url, server.model_path, load, progress)
    row.update(figures)
    row.update(sampler.totals())
    row["timeseries"] = sampler.frame().to_dict(orient="records")
    store.append(row)
    return {**row, "reused": False}


def table(rows: list[dict]) -> pd.DataFrame:
    """Rows as a DataFrame, without the bulky time series."""
    return pd.DataFrame([{k: v for k, v in r.items() if k != "timeseries"} for r in rows])


def timeseries(rows: list[dict]) -> pd.DataFrame:
    """The /metrics samples of each row, stacked, labelled by config."""
    frames = []
    for r in rows:
        ts = pd.DataFrame(r.get("timeseries") or [])
        if not ts.empty:
            ts["config_label"], ts["run_id"] = r["config_label"], r["run_id"]
            frames.append(ts)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
