"""Load generation (vLLM's own benchmark code) and /metrics sampling."""
from helpers.measure.load import Load, LoadError, run_load
from helpers.measure.metrics import MetricsSampler, capacity, parse, scrape

__all__ = ["Load", "LoadError", "MetricsSampler", "capacity", "parse", "run_load", "scrape"]
