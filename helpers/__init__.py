"""The library every notebook and lab imports: one place for engine plumbing.

    from helpers import EngineConfig, Load, measure, capacity, charts

Layout: `config` (the one validated settings object), `engine/` (server processes, the
one-engine lock, start-up log), `measure/` (loads from vLLM's benchmark code, /metrics),
`results/` (fingerprint, append-only store), `charts` (Altair), `experiment` (the flow
config → server → load → row → store), `correctness`, `models`, `doctor`, `widgets`.
"""
from helpers import charts
from helpers.config import ConfigError, EngineConfig
from helpers.engine import EngineBusyError, EngineStartError, stop_all
from helpers.experiment import capacity, engine_for, measure, stop, table, timeseries
from helpers.measure import Load, LoadError
from helpers.sizes import pick, set_size, size

__all__ = ["ConfigError", "EngineBusyError", "EngineConfig", "EngineStartError", "Load", "LoadError",
           "capacity", "charts", "engine_for", "measure", "pick", "set_size", "size", "stop",
           "stop_all", "table", "timeseries"]
