"""The library every notebook and lab imports: one place for engine plumbing.

    import helpers as H
    from helpers.chapters import ch3      # the chapter's own home: its designs, panels, claims, exercises

Layout (helpers/README.md draws the layers): `settings` (every engine setting declared once), `config`
(the one validated settings object), `engine/` (server processes, the one-engine lock, checks before
a start, start-up log, what an engine reports about itself), `load/` (loads from vLLM's benchmark code,
/metrics sampling), `results/` (fingerprint, append-only store, pooling a room, other tools' result
files), `experiment` (the flow config → server → load → row → store), the judging layer (`slo`,
`tuning`, `advisor`, `verdicts`: pure functions of rows), presentation (`tables`, `charts`, `widgets`,
`registry`, `exercises`), and `chapters/` (one home per chapter and lab). `doctor` and `book` are tools.

Everything is imported when `helpers` is (about 0.5 s here, pandas included) except the three
modules that load Altair (about 3.5 s more): `charts`, `widgets` and `book` load on first use.
Server processes do not import this package at all: they start through
helpers/engine/_launch.py, run by path.
"""
# Settings and errors → one validated config → the engine → loads and results → a measurement
# flow → judging (pure functions of rows) → presentation → the chapters' homes.
from helpers import errors, hardware, run_size, settings  # noqa: F401 - the lowest layer
from helpers.i18n import tr
from helpers import config, models, quantize  # noqa: F401
from helpers import engine, load, results  # noqa: F401
from helpers import correctness, experiment  # noqa: F401
from helpers import advisor, scheduler_rule, slo, tuning, verdicts  # noqa: F401
from helpers import doctor, exercises, registry, tables  # noqa: F401
from helpers.config import EngineConfig
from helpers.engine import EngineBusyError, EngineStartError, stop_all
from helpers.errors import ConfigError
from helpers.experiment import capacity, engine_for, measure, measure_each, stop, with_floor
from helpers.load import Load, LoadError
from helpers.engine.server import process_layout
from helpers.exercises import Choice, Question
from helpers.run_size import set_size, size, smoke_or_full
from helpers.tables import numbered, samples, table
from helpers.slo import SLO, goodput

_WITH_ALTAIR = {"charts", "widgets", "book"}
# The learner's surface: exactly the names the notebooks, labs and solutions use as `H.<name>` (a test
# keeps it so; helpers/README.md says what each is for). Everything else is the guide's own plumbing.
__all__ = ["Choice", "ConfigError", "EngineConfig", "Load", "Question", "SLO", "advisor", "capacity",
           "charts", "config", "correctness", "doctor", "engine", "engine_for", "experiment", "goodput",
           "hardware", "measure", "measure_each", "models", "process_layout", "quantize",
           "registry", "results", "run_size", "samples", "scheduler_rule", "size", "slo", "smoke_or_full",
           "stop", "table", "tr", "tuning", "verdicts", "widgets", "with_floor"]


tables.show_in_language()  # a Chinese notebook's tables show their headings in Chinese


def __getattr__(name):
    if name in _WITH_ALTAIR:
        import importlib
        return importlib.import_module(f"helpers.{name}")
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")

