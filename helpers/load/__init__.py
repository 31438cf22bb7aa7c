"""Load generation (vLLM's own benchmark code) and /metrics sampling."""
from helpers.load.metrics import MetricsSampler, parse, scrape
from helpers.load.workloads import Load, LoadError, run_load

__all__ = ["Load", "LoadError", "MetricsSampler", "parse", "run_load", "scrape"]
