"""Results: environment fingerprint, the append-only store and the one way a measurement is reused or
taken (`reuse_or_measure`), and pooling a room (`workshop`)."""
from helpers.results.fingerprint import fingerprint
from helpers.results.store import ResultStore, load_all, result_key, reuse_or_measure

__all__ = ["ResultStore", "fingerprint", "load_all", "result_key", "reuse_or_measure"]


def __getattr__(name):
    """`workshop` (a workshop room) and `other_tools` (other tools' files) load on first use: notebook 90
    reads them as `H.results.workshop`, and nothing else a chapter runs needs them."""
    if name in ("workshop", "other_tools"):
        import importlib
        return importlib.import_module(f"helpers.results.{name}")
    raise AttributeError(f"module 'helpers.results' has no attribute {name!r}")
