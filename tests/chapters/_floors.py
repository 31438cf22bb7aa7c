"""Rows as `measure` stores them and the floors `with_floor` puts on them, in each process layout,
so an exercise check is tried with its solution computed by the taught method in both layouts."""
from helpers import experiment
from helpers.load import Load
from helpers.results import ResultStore

ROOFS = {2: {"bandwidth_gbs": 20.0, "threads": 2, "compute_gflops": 100.0, "bandwidth_kernel": "torch read"},
         1: {"bandwidth_gbs": 12.0, "threads": 1, "compute_gflops": 60.0, "bandwidth_kernel": "torch read"}}
LAYOUTS = ("vllm", "merged")  # vLLM's own: the worker bound to one core of two; merged: torch on both


def measured(folder, load: Load, running: float, layout: str, tpot: float = 70.0) -> dict:
    """A stored row of the embedded model in float32 on a 2-core host, as `measure` leaves it."""
    return {"key": f"k-{load.max_concurrency}-{layout}", "run_id": f"r-{load.max_concurrency}-{layout}",
            "model_folder": str(folder), "cfg_dtype": "float32", "mean_tpot_ms": tpot, "kv_cache_tokens": 100_000,
            "kv_cache_gib": 100_000 * 46_080 / 2**30, "load_input_len": load.input_len,
            "load_output_len": load.output_len, "load_num_prompts": load.num_prompts,
            "load_max_concurrency": load.max_concurrency, "mean_running": running, "env_cpu_cores": 2,
            **({"worker_cores": 1} if layout == "vllm" else {})}


def with_floors(rows: dict, monkeypatch, tmp_path) -> dict:
    """`experiment.with_floor` on each row, with the roofs above instead of a probe."""
    monkeypatch.setattr(experiment, "roof", lambda threads=None, store=None, **kw: ROOFS[threads or 2])
    store = ResultStore(tmp_path / "results")
    for row in rows.values():
        store.append(row)
    return {c: experiment.with_floor(row, store) for c, row in rows.items()}
