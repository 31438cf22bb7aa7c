"""Results: environment fingerprint, the append-only store, and pooling a room (`workshop`)."""
from helpers.results.fingerprint import fingerprint
from helpers.results.store import ResultStore, load_all, result_key

__all__ = ["ResultStore", "fingerprint", "load_all", "result_key"]


def __getattr__(name):
    """`workshop` (a workshop room) and `imports` (other tools' files) load on first use: notebook 90
    reads them as `H.results.workshop`, and nothing else a chapter runs needs them."""
    if name in ("workshop", "imports"):
        import importlib
        return importlib.import_module(f"helpers.results.{name}")
    raise AttributeError(f"module 'helpers.results' has no attribute {name!r}")
