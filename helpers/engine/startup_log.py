"""Reading what vLLM prints while it starts: progress stages, the capacity report, errors."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from helpers.i18n import N_

_NUM = r"([\d,]+(?:\.\d+)?)"


def _num(text: str) -> float:
    return float(text.replace(",", ""))


@dataclass
class StartupReport:
    """The capacity figures the engine reports once it has sized its KV cache."""

    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None  # sequences of max_model_len that fit at once
    concurrency_at_len: int | None = None
    kv_cache_gib: float | None = None
    memory_budget_gib: float | None = None  # what gpu_memory_utilization asked for
    node_memory_gib: float | None = None  # CPU: the NUMA node's memory the fraction applies to
    non_kv_gib: float | None = None  # weights, activations, runtime
    weights_load_s: float | None = None
    init_engine_s: float | None = None
    device_kind: str | None = None  # "CPU" or "GPU", from the report line
    startup_lines: list[str] | None = None  # the memory and capacity lines as printed, for a learner to read
    # torch.compile's on-disk cache (compiled engines only): "loaded", "saved" (compiled and
    # stored for the next start) or "load failed: <vLLM's reason>" (compiled again). None: eager.
    compile_cache: str | None = None
    checkpoint_gib: float | None = None  # the weight files on disk (weight_utils: "Checkpoint size")
    weights_gib: float | None = None  # GPU only: memory the loaded weights took ("Model loading took")
    # The kernel a quantized checkpoint's linear layers run on ("Selected X for Y" / "Using X for Y").
    linear_kernel: str | None = None
    # Cores rank 0 computes on where vLLM bound its OpenMP threads (the multiprocess executor's
    # OMPProcessManager); None where it did not (the merged layout, "nobind"): then all of them.
    worker_cores: int | None = None
    # Who computed on which cores ("worker rank 0 on core(s) [0]") and the cores vLLM kept free for
    # the server and scheduler, as printed at start (core_binding): kept in the row, so a later
    # reader of a stored row needs no log.
    bound_ranks: list[str] | None = None
    cores_kept_free: list[str] | None = None

    def as_dict(self) -> dict:
        return asdict(self)


_PATTERNS = {
    "kv": re.compile(r"(CPU|GPU) KV cache size: " + _NUM + r" tokens"),
    "conc": re.compile(r"Maximum concurrency for " + _NUM + r" tokens per request: " + _NUM + r"x"),
    "cpu_kv": re.compile(r"Auto set \(" + _NUM + "/" + _NUM + r"\) GiB for KV cache on node \d+, with "
                         + _NUM + r" GiB requested memory for the worker\. " + _NUM
                         + r" GiB memory was consumed by non-kv usages"),
    "cpu_kv_fixed": re.compile(r"Explicitly set \(" + _NUM + "/" + _NUM + r"\) GiB for KV cache"),
    "gpu_kv": re.compile(r"Available KV cache memory: " + _NUM + r" GiB"),
    # GPU with kv_cache_memory_bytes: Worker.determine_available_memory skips profiling and says so instead
    "gpu_kv_fixed": re.compile(r"reserved " + _NUM + r" GiB memory for KV Cache as specified by kv_cache_memory_bytes"),
    "weights": re.compile(r"Loading weights took " + _NUM + r" seconds"),
    "checkpoint": re.compile(r"Checkpoint size: " + _NUM + r" GiB"),
    "weights_mem": re.compile(r"Model loading took " + _NUM + r" GiB"),
    "kernel": re.compile(r"(?:Selected|Using) (\w+Kernel\w*) for (\w+)"),
    "init": re.compile(r"init engine \(profile, create kv cache, warmup model\) took " + _NUM + r" s"),
    # vllm/compilation/decorators.py
    "cache_failed": re.compile(r"Compiling model again due to a load failure from \S+, reason: (.+)"),
    "cache_loaded": re.compile(r"Directly load AOT compilation from path"),
    "cache_saved": re.compile(r"saved AOT compiled function to"),
}


def _compile_cache(log: str) -> str | None:
    if m := _PATTERNS["cache_failed"].search(log):
        return "load failed: " + m.group(1).strip()
    if _PATTERNS["cache_loaded"].search(log):
        return "loaded"
    return "saved" if _PATTERNS["cache_saved"].search(log) else None


_RANK0_CORES = re.compile(r"local_rank=0, core ids=\[([\d, ]*)\]")  # utils/ompmultiprocessing.py


def parse_startup(log: str) -> StartupReport:
    r = StartupReport()
    if m := _PATTERNS["kv"].search(log):
        r.device_kind, r.kv_cache_tokens = m.group(1), int(_num(m.group(2)))
    if m := _PATTERNS["conc"].search(log):
        r.concurrency_at_len, r.max_concurrency = int(_num(m.group(1))), _num(m.group(2))
    if m := _PATTERNS["cpu_kv"].search(log):
        r.kv_cache_gib, r.node_memory_gib = _num(m.group(1)), _num(m.group(2))
        r.memory_budget_gib, r.non_kv_gib = _num(m.group(3)), _num(m.group(4))
    elif m := _PATTERNS["cpu_kv_fixed"].search(log):
        r.kv_cache_gib, r.node_memory_gib = _num(m.group(1)), _num(m.group(2))
    elif m := _PATTERNS["gpu_kv"].search(log) or _PATTERNS["gpu_kv_fixed"].search(log):
        r.kv_cache_gib = _num(m.group(1))
    if m := _PATTERNS["weights"].search(log):
        r.weights_load_s = _num(m.group(1))
    if m := _PATTERNS["init"].search(log):
        r.init_engine_s = _num(m.group(1))
    if m := _PATTERNS["checkpoint"].search(log):
        r.checkpoint_gib = _num(m.group(1))
    if m := _PATTERNS["weights_mem"].search(log):
        r.weights_gib = _num(m.group(1))
    if m := _PATTERNS["kernel"].search(log):
        r.linear_kernel = f"{m.group(1)} ({m.group(2)})"
    if m := _RANK0_CORES.search(log):
        r.worker_cores = len([c for c in m.group(1).replace(" ", "").split(",") if c]) or None
    r.startup_lines = report_lines(log) or None
    r.compile_cache = _compile_cache(log)
    bound, kept = core_binding(log)
    r.bound_ranks, r.cores_kept_free = bound or None, kept or None
    return r


# The lines in which the engine reports how it shared out memory and what fits in the KV cache.
_REPORT_MARKERS = ("Auto set (", "Explicitly set (", "Available KV cache memory", "Overriding num_gpu_blocks",
                   "memory for KV Cache as specified",
                   "KV cache size:")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RECORD_PREFIX = re.compile(r"^.*?\b(?:INFO|WARNING)\s+\d\d-\d\d \d\d:\d\d:\d\d\s+\[[^\]]*\]\s*")


def report_lines(log: str) -> list[str]:
    """The engine's own memory / capacity report lines, without the log-record prefix."""
    plain = _ANSI.sub("", log)  # vLLM colours its log records when it thinks it writes to a terminal
    return [_RECORD_PREFIX.sub("", ln).strip() for ln in plain.splitlines() if any(m in ln for m in _REPORT_MARKERS)]


# Start-up stages, in order, with the log text that marks each one.
STAGES = [
    ("importing vLLM", "version"),
    ("reading the model config", "Resolved architecture"),
    ("starting the engine process", "Initializing a V1 LLM engine"),
    ("loading weights", "Starting to load model"),
    ("sizing the KV cache", "Loading weights took"),
    ("compiling / warming up", "KV cache size:"),
    ("starting the HTTP server", "init engine"),
    ("ready", "Application startup complete"),
]


def stage(log: str) -> tuple[int, str]:
    """(index, name) of the furthest start-up stage the log has reached."""
    reached = (0, STAGES[0][0])
    for i, (name, marker) in enumerate(STAGES):
        if marker in log:
            reached = (i, name)
    return reached


# Where a start's time goes, from the log's own timestamps (one-second resolution). Each phase
# ends at the first line that marks it; a phase the layout does not have (the worker's import in
# the merged layout) is 0.
_STAMPED = re.compile(r"^\((?P<proc>[A-Za-z_-]+?)(?:-\d+)? pid=\d+\)\s+(?:DEBUG|INFO|WARNING|ERROR)\s+"
                      r"(?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d)\b(?P<text>.*)$", re.M)
PHASES = ("import", "config", "engine_core_import", "worker_import", "model", "kv_cache_and_warmup", "api_routes")


def phases(log: str, spawned_at: float, ready_at: float) -> dict[str, float] | None:
    """Seconds of each start-up phase: `import` (process start to the API server's first line),
    `config` (to its last line before the engine core's first), `engine_core_import` (the spawned
    engine core imports torch and vLLM again), `worker_import` (the spawned worker does too; 0 in
    the merged layout), `model` (to "Loading weights took"), `kv_cache_and_warmup` (to "init
    engine … took"), `api_routes` (to healthy). `spawned_at` and `ready_at` are epoch seconds.
    None when the log lacks the markers (a failed start)."""
    import time as _time

    year = _time.localtime(spawned_at).tm_year
    lines = []
    for m in _STAMPED.finditer(_ANSI.sub("", log)):
        t = _time.mktime(_time.strptime(f"{year}-{m['stamp']}", "%Y-%m-%d %H:%M:%S"))
        lines.append((t, m["proc"], m["text"]))
    api = [t for t, proc, _ in lines if proc == "APIServer"]
    core = [t for t, proc, _ in lines if proc == "EngineCore"]
    worker = [t for t, proc, _ in lines if proc in ("VllmWorker", "Worker")]
    weights = [t for t, _, text in lines if "Loading weights took" in text]
    init = [t for t, _, text in lines if "init engine (profile, create kv cache, warmup model)" in text]
    if not (api and core and weights and init):
        return None
    config_end = max([t for t in api if t <= core[0]] or [api[0]])
    marks = [spawned_at, api[0], config_end, core[0], worker[0] if worker else core[0], weights[0], init[0], ready_at]
    marks = [max(marks[0], m) for m in marks]  # one-second stamps can read before the spawn
    for i in range(1, len(marks)):
        marks[i] = max(marks[i], marks[i - 1])
    return {name: round(marks[i + 1] - marks[i], 1) for i, name in enumerate(PHASES)}


_ERROR_LINE = re.compile(
    r"^.*?((?:[A-Za-z_.]+(?:Error|Exception)|AssertionError|RuntimeError|ValueError|OSError)\b:?\s.*)$",
    re.M)


# An INFO/WARNING record may quote an exception name (e.g. the ulimit warning mentions
# OSError); only traceback lines and ERROR records count.
_LOG_RECORD = re.compile(r"\b(?:DEBUG|INFO|WARNING)\s+\d\d-\d\d \d\d:\d\d:\d\d\b")


def error_line(log: str) -> str | None:
    """The engine's own reason for failing: the most telling exception line in the log."""
    lines = [m.group(1).strip() for m in _ERROR_LINE.finditer(log) if not _LOG_RECORD.search(m.group(0))]
    lines = [ln for ln in lines if not ln.startswith(("DeprecationWarning", "FutureWarning", "UserWarning"))]
    if not lines:
        return None
    # A worker's root cause is usually more specific than the final "Engine core
    # initialization failed" wrapper, so prefer lines that are not wrappers.
    wrappers = ("Engine core initialization failed", "EngineCore failed to start",
                "RuntimeError: Engine process failed", "Worker failed with error")
    specific = [ln for ln in lines if not any(w in ln for w in wrappers)]
    return (specific or lines)[-1]


HINTS = [
    ("less than desired", "gpu_memory_utilization",
     N_("lower gpu_memory_utilization (the guide's CPU default is 0.25), or free memory on this machine.")),
    # CPU, vllm/v1/worker/cpu_worker.py determine_available_memory: the KV share is fraction × node
    # memory minus what the worker already holds (weights, runtime). Negative: the fraction is too
    # low. Positive but above the node's free memory: memory ran short after the weights loaded.
    ("less than requested memory for kv (-", "gpu_memory_utilization",
     N_("raise gpu_memory_utilization: the weights and the worker's working memory already fill the budget, "
     "so nothing is left for the KV cache.")),
    ("less than requested memory for kv", "gpu_memory_utilization",
     N_("lower gpu_memory_utilization, or free memory on this machine: the KV share no longer fits in the "
     "node's free memory.")),
    ("No available memory for the cache blocks", "gpu_memory_utilization",
     N_("raise gpu_memory_utilization a little, or lower max_model_len.")),
    ("is larger than the maximum number of tokens that can be stored in KV cache", "max_model_len",
     N_("lower max_model_len, or raise gpu_memory_utilization / use kv_cache_dtype='fp8'.")),
    ("To serve at least one request with the model's max seq len", "max_model_len",
     N_("lower max_model_len to what the engine estimates, or give the KV cache more room "
     "(gpu_memory_utilization, or more blocks in num_gpu_blocks_override: one block is reserved).")),
    ("must be divisible by tensor parallel size", "tensor_parallel_size",
     N_("choose a size that divides the model's attention heads.")),
    ("Not enough allowed NUMA nodes", "tensor_parallel_size",
     N_("set VLLM_CPU_OMP_THREADS_BIND, e.g. '0|1' for two ranks on two cores.")),
    ("address already in use", "port", N_("pick another port, or let the harness choose a free one.")),
    ("static_scaled_fp8_quant", "quantization", N_("quantization=None on CPU: online fp8 has no CPU kernel.")),
]


def hint_for(log: str) -> tuple[str, str] | None:
    """(setting, what to try) for errors the guide has met before; what to try in English (it is stored
    with a refusal, and shown through tr() in the learner's language)."""
    for needle, setting, fix in HINTS:
        if needle.lower() in log.lower():
            return setting, fix
    return None


# -- per rank: memory and cores -----------------------------------------------------------------
_BIND = re.compile(r"\((\w+) pid=\d+\).*local_rank=(\d+), core ids=\[([\d, ]*)\]")  # utils/ompmultiprocessing.py
_RESERVED = re.compile(r"reserved_cpus=\[([\d, ]*)\]")


def rank_memory(lines: list[str] | str) -> list[dict]:
    """One dict per CPU rank's "Auto set" line (cpu_worker.determine_available_memory), in the
    order printed: KV GiB, the node's GiB, the GiB the fraction requested, non-KV GiB. A GPU
    engine prints none of these ("Available KV cache memory" instead)."""
    text = lines if isinstance(lines, str) else "\n".join(lines or [])
    return [{"kv_gib": _num(m.group(1)), "node_gib": _num(m.group(2)), "requested_gib": _num(m.group(3)),
             "non_kv_gib": _num(m.group(4))} for m in _PATTERNS["cpu_kv"].finditer(text)]


def core_binding(log: str) -> tuple[list[str], list[str]]:
    """Who computes on which cores ("worker rank 0 on core(s) [0]"), and the cores kept free for
    the server and scheduler (VLLM_CPU_NUM_OF_RESERVED_CPU), as vLLM printed them at start. The line is
    printed by the engine core (`OMPProcessManager` runs in `MultiprocExecutor._init_executor`) about
    the workers it is about to start, so the rank is a worker's whoever printed it; a data-parallel
    engine core (EngineCore_DP1) names its replica."""
    def who(proc: str, rank: str) -> str:
        replica = proc.rsplit("_DP", 1)[1] if "_DP" in proc else None
        return f"worker rank {rank}" + (f" of replica {replica}" if replica else "")
    computes = sorted(f"{who(proc, rank)} on core(s) [{cores}]" for proc, rank, cores in _BIND.findall(log))
    kept = sorted({c for found in _RESERVED.findall(log) for c in found.replace(" ", "").split(",") if c})
    return computes, kept
