"""Results: environment fingerprint, the append-only store, and pooling a room (`pool`)."""
from helpers.results.fingerprint import fingerprint
from helpers.results.store import ResultStore, load_all, result_key

__all__ = ["ResultStore", "fingerprint", "load_all", "result_key"]
