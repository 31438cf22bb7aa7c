"""The library every notebook and lab imports: one place for engine plumbing.

    import helpers as H
    from helpers import EngineConfig, Load, charts

Layout: `settings` (every engine setting declared once), `config` (the one validated settings
object), `engine/` (server processes, the one-engine lock, checks before a start, start-up log, the
facts an engine reports), `load/` (loads from vLLM's benchmark code, /metrics sampling), `results/`
(fingerprint, append-only store, pooling a room), `charts` (Altair), `experiment` (the flow config →
server → load → row → store), `slo` (latency targets, goodput, the knee of a rate sweep), `advisor`
(the next setting to try, from a run's rows), `tuning` (judging one-at-a-time changes on goodput),
`target` (chapter 6's service and the capstone's pass rule), `runners` (the rate sweep, the tuning
walk and the service's preparation: loops that measure and judge, above both), `capstone` (the capstone
lab's check, hint and panel), `report` (computed verdicts), `widgets`, `correctness`, `models`, `doctor`, `exercises`,
`course` and `book` (the guide as executed HTML).

Names are imported lazily, so that `import helpers` stays cheap (pandas and Altair load only
when a chart or table is asked for). Server processes do not import this package at all:
they start through helpers/engine/_launch.py, run by path.
"""
import importlib

_EXPORTS = {
    "EngineConfig": "helpers.config", "ConfigError": "helpers.errors",
    "EngineBusyError": "helpers.engine", "EngineStartError": "helpers.engine", "stop_all": "helpers.engine",
    "capacity": "helpers.experiment", "engine_for": "helpers.experiment", "measure": "helpers.experiment",
    "measure_each": "helpers.experiment", "stop": "helpers.experiment", "table": "helpers.experiment", "samples": "helpers.experiment",
    "numbered": "helpers.experiment", "goodput": "helpers.slo",
    "Load": "helpers.load", "LoadError": "helpers.load",
    "pick": "helpers.sizes", "set_size": "helpers.sizes", "size": "helpers.sizes",
}
_MODULES = {"book", "charts", "report", "widgets", "correctness", "models", "doctor", "exercises", "experiment",
            "config", "settings", "engine", "load", "results", "sizes", "hardware", "course", "claims", "quantize",
            "advisor", "slo", "tuning", "target", "runners", "errors", "capstone"}
__all__ = sorted(_EXPORTS) + sorted(_MODULES)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    if name in _MODULES:
        return importlib.import_module(f"helpers.{name}")
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")


def _prewarm_in_a_kernel() -> None:
    """Test runs (merged layout) only: a notebook kernel starts vLLM's import for its first engine
    start now, in a separate process (helpers/engine/zygote.py), while its first cells run."""
    import os
    import sys
    kernel = sys.argv and sys.argv[0].endswith("ipykernel_launcher.py")  # not a test process that imported ipykernel
    if os.environ.get("GUIDE_ENGINE_LAYOUT") == "merged" and kernel:
        try:
            from helpers.engine.server import prewarm
            prewarm()
        except Exception:  # noqa: BLE001 - a head start, never a reason to fail an import
            pass


_prewarm_in_a_kernel()
