"""The flow every measurement takes: config → server (reused while only the load changes)
→ load → one tidy row → the results store.

Notebooks call `measure(config, load)` and `capacity(config)`; both return a stored row
instead of re-running when config, load and environment match, unless `force=True`: every
measurement goes through `results.reuse_or_measure`, the one place that decides what matches, and
the row it returns says whether it was reused and, if not, why it was measured again.

With `GUIDE_ENDPOINT` set (helpers/engine/remote.py) the same calls measure a server that is
already running instead of starting one: the guide's default config only (a remote engine's
settings cannot be toggled from here), any load.
"""
from __future__ import annotations

import contextlib
import time
import uuid
from pathlib import Path

from helpers import hardware, models, probes, run_size
from helpers.config import ConfigError, EngineConfig
from helpers.engine import EngineStartError, Server, preflight, remote, reported, shared
from helpers.engine.server import layout_for, reset_prefix_cache, start_error_text
from helpers.i18n import tr
from helpers.load import Load, MetricsSampler, run_load
from helpers.results import ResultStore, fingerprint, result_key, reuse_or_measure, roofline
from helpers.results.rows import combine
from helpers.results.store import MEASUREMENT_VERSION


def engine_for(config: EngineConfig, progress: bool = True) -> Server | remote.Endpoint:
    """The running server for this config: the machine's engine when it already runs this
    config (whoever started it), else a new one after stopping the idle one
    (helpers/engine/shared.py). With GUIDE_ENDPOINT set: that server, after refusing settings
    it cannot change."""
    if (endpoint := remote_for(config)) is not None:
        return endpoint
    return shared.engine(config, progress)


def try_start(config: EngineConfig, *, force: bool = False, tag: str = "",
              store: ResultStore | None = None) -> EngineStartError | None:
    """Start an engine for `config` and stop it again: None when it started, else the
    EngineStartError carrying vLLM's own line (chapter 2's failure on purpose). The outcome is
    stored like a measurement, so a second run reads it back instead of starting again (a
    refusal costs a whole start); `force` tries again."""
    taken = reuse_or_measure(base_row(config, None, tag, "start_attempt"), lambda: _attempt(config), force=force,
                             store=store)
    if taken["started"]:
        return None
    read_back = (tr("\n(read back from this machine's attempt of {time}; force=True starts it again)",
                    time=taken['time'])
                 if taken["reused"] else "")
    parts = taken.get("start_parts")
    said = (start_error_text(parts, taken.get("engine_line"), taken.get("start_setting"), parts.get("value"),
                                    taken.get("start_log")) if parts else taken["start_error"])  # older rows: as stored
    return EngineStartError(f"{said}{read_back}", taken.get("engine_line"),
                            taken.get("start_setting"), Path(taken.get("start_log") or "."), parts)


def _attempt(config: EngineConfig) -> dict:
    try:
        engine_for(config)
        failed = None
    except EngineStartError as e:
        failed = e
    else:
        stop()
    return {"started": failed is None, "start_error": str(failed) if failed else None,
            "engine_line": failed.engine_line if failed else None,
            "start_setting": failed.setting if failed else None,
            "start_log": str(failed.log_path) if failed else None,
            "start_parts": failed.parts if failed else None}


def measure_or_why(config: EngineConfig, load: Load, **kwargs) -> tuple[dict | None, str | None]:
    """(row, None), or (None, why) where this machine refuses `config` before a start or the
    engine fails to start or serve it (vLLM's own first line): for optional parts of a chapter
    that go on without it (a compilation mode, a parallel split)."""
    if (why := preflight.refusal(config)) is not None:
        return None, why.problem
    try:
        return measure(config, load, **kwargs), None
    except (EngineStartError, LoadFailedError) as failed:
        return None, str(failed).splitlines()[0][:300]


def turn_for(config: EngineConfig, what: str):
    """Hold the machine's engine for one measurement (a newcomer waits; nothing cuts it off).
    A remote endpoint is not this machine's engine: no turn."""
    if remote.selected() is not None:
        return contextlib.nullcontext()
    return shared.turn(f"{what} on {config.label()}")


def remote_for(config: EngineConfig) -> remote.Endpoint | None:
    """The endpoint GUIDE_ENDPOINT names (None: local engines), once `config` is known to ask
    it for no engine setting (RemoteSettingError names the setting and what the server runs)."""
    endpoint = remote.selected()
    if endpoint is not None:
        remote.check_config(config, endpoint, lambda: reported.read(endpoint))
    return endpoint


def _client(server) -> dict:
    """What a remote server's clients need besides its URL: the key and a local tokenizer."""
    return {"api_key": getattr(server, "api_key", None), "tokenizer": getattr(server, "tokenizer", None)}


def stop(now: bool = False) -> None:
    """This notebook is done with the engine: it stops once no other notebook uses it (after a
    grace of GUIDE_ENGINE_GRACE seconds, so the next notebook can take it over). `now=True`
    stops it at once, whoever uses it."""
    if now:
        shared.stop_engine("H.stop(now=True)")
    else:
        shared.release()


_ASK = object()


def base_row(config: EngineConfig, load: Load | dict | None, tag: str, kind: str, repeats: int = 1,
             endpoint=_ASK) -> dict:
    """What every stored row starts with: run id, key, time, config, load and machine.
    `load` is a Load, or for other kinds of row (greedy answers) a dict of what was asked.
    A remote server's rows also carry its URL, model, version and settings (remote.Endpoint.record),
    and its key includes them, so they never match a local row or another server's. `endpoint`:
    what `remote_for(config)` returned, where the caller already asked."""
    env = fingerprint()
    cfg = config.as_dict()
    if isinstance(load, Load):
        what = {**load.as_dict(), "repeats": repeats}  # 1 and 3 repeats are different results
    else:
        what = load
    endpoint = remote_for(config) if endpoint is _ASK else endpoint
    if endpoint is None:
        layout = layout_for(config)  # vLLM's process layout unless GUIDE_ENGINE_LAYOUT says otherwise
        where, keyed, label = {"engine_location": "local"}, ({"layout": layout} if layout != "vllm" else {}), None
    else:
        layout, where = None, endpoint.record()
        keyed, label = endpoint.identity(), f"remote {endpoint.url.split('://', 1)[1]}"
    row = {"run_id": uuid.uuid4().hex[:10],
           "key": result_key({**cfg, **keyed}, what, env["env_id"], kind),
           "engine_layout": layout, **where,
           "measurement_version": MEASUREMENT_VERSION,  # a column too, so a pooled room never mixes versions unseen
           "kind": kind, "tag": tag, **({"repeats": repeats} if isinstance(load, Load) else {}),
           "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "config_label": label or config.label(), "load_label": load.label() if isinstance(load, Load) else None}
    row.update({f"cfg_{k}": v for k, v in cfg.items()})
    if isinstance(load, Load):
        row.update({f"load_{k}": v for k, v in load.as_dict().items()})
    row.update({f"env_{k}": v for k, v in env.items()})
    return row


def capacity(config: EngineConfig, *, force: bool = False, tag: str = "", store: ResultStore | None = None,
             progress: bool = True) -> dict:
    """Start an engine (or reuse one) and record what it reports about its KV cache.

    One start, one reading: the row has no repeats, so its figures (KV tokens, non-KV memory)
    carry no spread of their own, and a verdict comparing capacity rows uses
    `verdicts.DEFAULT_NOISE`. On the CPU the KV share is fraction × the node's memory minus what
    the worker holds at that moment (`CPUWorker.determine_available_memory`), so a second start of
    the same configuration can report a slightly different cache."""
    def read_it() -> dict:
        with turn_for(config, "a capacity reading"):
            return reported.read(engine_for(config, progress))  # what the engine reports about itself

    return reuse_or_measure(base_row(config, None, tag, "capacity"), read_it, force=force, store=store)


def measure(config: EngineConfig, load: Load, *, repeats: int | None = None, force: bool = False, tag: str = "",
            store: ResultStore | None = None, progress: bool = True, sample_every: float = 0.5) -> dict:
    """Run `load` on an engine for `config` `repeats` times; returns (and stores) one tidy row.

    A fresh engine first gets a warm-up of two short requests (not counted; `Load.warmup` says
    why two are enough). Each repeat sends new prompts of the same shape. The row's
    figures are the median of the repeats, `<figure>_min` / `<figure>_max` their spread, and
    `runs` keeps every repeat. `repeats` defaults to the size's (1 at smoke size, 3 at full).
    """
    repeats = run_size.repeats() if repeats is None else repeats
    if repeats < 1:
        raise ConfigError(
            "repeats",
            tr("must be at least 1, got {repeats}.", repeats=repeats),
            tr("repeats=3 (or 1 for a quick look)."),
        )
    endpoint = remote_for(config)
    limit = (endpoint.max_model_len if endpoint is not None else None) or config.max_model_len
    if load.longest_prompt() > limit:
        what = (
            tr("prefix ({prefix_len}) + rest of the prompt ({input_len}) + answer ({output_len})",
               prefix_len=load.prefix_len, input_len=load.input_len, output_len=load.output_len)
            if load.kind == "prefix"
            else tr("longest request")
        )
        whose = tr("the server's max_model_len") if endpoint is not None else "max_model_len"
        raise ConfigError(
            "max_model_len",
            tr(
                "({whose}, {limit}) is shorter than this load's {what}: "
                "{longest_prompt} tokens, so the server would reject it.",
                whose=whose,
                limit=limit,
                what=what,
                longest_prompt=load.longest_prompt(),
            ),
            tr("max_model_len >= {longest_prompt}, or a shorter load.", longest_prompt=load.longest_prompt()),
        )

    def run_it() -> dict:
        with turn_for(config, f"the load {load.label()}"):
            return _run_repeats(config, load, repeats, endpoint, progress, sample_every)

    row = reuse_or_measure(
        base_row(config, load, tag, "load", repeats, endpoint=endpoint), run_it, force=force, store=store
    )
    # A floor is a step a chapter asks for (`with_floor`), against today's roofs: not carried over.
    return {k: v for k, v in row.items() if k not in roofline.COLUMNS} if row["reused"] else row


def with_floor(row: dict, store: ResultStore | None = None) -> dict:
    """The row with its decode floor and MBU (helpers/results/roofline.py, `annotate`): against the
    machine's roof (every core) and, beside it, the roof of the cores its worker computed on. The
    step chapter 7 and lab 5 take (chapter 6 and lab 4 do not: their advisor then skips the MBU
    reading); probing a roof the first time takes about ten seconds. The floors are stored with
    the row (the same run), so the room and the book read them. A remote server's row gets empty
    columns: its roofs are not this machine's."""
    if row.get("engine_location") == "remote":
        return roofline.unknown(row)
    store = store or ResultStore()
    machine = roof(None, store)
    threads = roofline.worker_threads(row)
    worker = machine if threads == machine["threads"] else roof(threads, store)
    # The machine's roof is the all-core probe, the one chapter 7 and lab 5 teach with, even where a probe
    # with fewer threads read faster (a disturbed all-core probe): chapter 7 says so and to probe again.
    out = roofline.annotate(row, machine, worker)
    stored = store.get(row["key"]) if row.get("key") else None
    if (
        out is not row
        and stored is not None
        and stored.get("run_id") == row.get("run_id")
        and any(stored.get(c) != out.get(c) for c in roofline.COLUMNS)
    ):
        store.append(out)
    return out


ROOF_SHAPE = (256, 576, 1536)  # a batch of 256 tokens through the embedded model's MLP (hidden × intermediate)


def roof(
    threads: int | None = None, store: ResultStore | None = None, *, probe: bool = True, force: bool = False
) -> dict | None:
    """This machine's roofs at `threads` cores (all by default): memory bandwidth (two methods) and
    matmul throughput in the compute dtype (helpers/probes.py), measured once per machine and
    stored as a row of kind "roof"; None where none is stored and `probe` is False. Probing takes
    about ten seconds and is best done with no load running."""
    store = store or ResultStore()
    gpu = hardware.default_device() == "cuda"
    threads = 0 if gpu else (threads or hardware.describe()["cpu_cores"])  # a GPU's roof has no thread count
    dtype = "bfloat16" if gpu else hardware.cpu_dtype()
    what = {"threads": threads, "dtype": dtype, "shape": list(ROOF_SHAPE), "probe": probes.PROBE_VERSION}
    key = result_key(what, None, fingerprint()["env_id"], "roof")
    machine = ResultStore(models.cache_dir() / "roofs")  # every results folder on this machine shares one probe
    if not force and store.get(key) is None and (old := machine.get(key)):
        store.append(old)  # the room and the book read it from the results
    if not probe and (force or store.get(key) is None):
        return None

    def probe_it() -> dict:
        time.sleep(1.5)  # an idle engine's shared-memory readers spin for busy_loop_s (1 s) after their last read
        if gpu:
            return probes.cuda_probe(dtype, ROOF_SHAPE)
        return probes.probe(threads, dtype, ROOF_SHAPE, run_size.smoke_or_full(5, 9))

    row = {
        "key": key,
        "kind": "roof",
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "measurement_version": MEASUREMENT_VERSION,
        **{f"env_{k}": v for k, v in fingerprint().items()},
    }
    row = reuse_or_measure(row, probe_it, force=force, store=store)
    if not row["reused"]:
        machine.append(row)
    return row


def measure_each(plan: dict | list, **kwargs) -> dict | list:
    """`measure` for several (config, load) pairs with one engine start per configuration.

    A notebook writes its comparison in the order a reader follows ({"budget 256": (cfg, load),
    "default": (base, load), ...}); run in that order, a configuration that returns after another
    one costs a second start (30-60 s on a CPU). Here the pairs run grouped by configuration, the
    engine already running first, and the rows come back in the order and shape given (a dict of
    names or a list). `kwargs` go to every `measure` call."""
    items = dict(plan) if isinstance(plan, dict) else dict(enumerate(plan))
    rows = {}
    for name in start_order({name: cfg for name, (cfg, _load) in items.items()}):
        cfg, load = items[name]
        rows[name] = measure(cfg, load, **kwargs)
    return {name: rows[name] for name in items} if isinstance(plan, dict) else [rows[i] for i in items]


def start_order(configs: dict) -> list:
    """The names of `configs` grouped by the engine each needs: the machine's running engine's
    group first, the others in the order they first appear (a remote endpoint: as given)."""
    names = list(configs)
    if remote.selected() is not None or not names:
        return names
    keys = {name: shared.key_for(cfg) for name, cfg in configs.items()}
    running = (shared.live_record() or {}).get("key")
    groups = list(dict.fromkeys(keys.values()))
    groups.sort(key=lambda k: k != running)  # stable: the running engine's group first
    return [name for k in groups for name in names if keys[name] == k]


def _run_repeats(config, load, repeats, endpoint, progress, sample_every) -> dict:
    """The figures of `repeats` runs of `load` (medians, spreads, every run) and what the engine reports."""
    server = endpoint if endpoint is not None else engine_for(config, progress)  # GUIDE_ENDPOINT asked once, in measure
    row = reported.read(server)  # what the engine reports about itself
    # The weights a decode step reads (roofline.annotate); a remote server's are not on this machine.
    row["model_folder"] = str(server.model_path) if endpoint is None else None
    headers = getattr(server, "headers", None)  # a remote server's key
    if not server.warmed_up:
        t0 = time.monotonic()
        run_load(server.base_url, server.model_path, load.warmup(), progress=False, **_client(server))
        shared.note_work(f"warm-up {load.warmup().label()}", config.label(), time.monotonic() - t0)
        if getattr(server, "shared", False):  # the machine's engine: whoever reuses it skips the warm-up
            shared.note_warm(server)
        server.warmed_up = True
    runs, first_series, t0 = [], None, time.monotonic()
    for i in range(repeats):
        # Each run starts cold: no hits left from an earlier load. Not on a remote server: it is
        # shared (a workshop's), and emptying its cache would disturb everyone else's runs.
        cold = reset_prefix_cache(server.base_url, headers) if endpoint is None else False
        with MetricsSampler(server.base_url, sample_every, headers) as sampler:
            figures = run_load(server.base_url, server.model_path, load.repeat(i), progress, **_client(server))
        if figures.get("request_start_s"):  # the timeline on the samples' axis: seconds since the first sample
            figures["request_start_s"] = [round(t - sampler.t0, 3) for t in figures["request_start_s"]]
        if not figures.get("completed"):  # nothing came back: say why instead of storing zeros
            raise LoadFailedError(load, figures.get("first_error"), getattr(server, "log_text", lambda: "")())
        runs.append({**figures, **sampler.totals(), "prefix_cache_reset": cold})
        if first_series is None:
            first_series = sampler.frame().to_dict(orient="records")
    shared.note_work(load.label(), config.label(), time.monotonic() - t0)
    row.update(combine(runs))
    row["timeseries"] = first_series  # the first repeat's /metrics samples, for live-usage charts
    return row


class LoadFailedError(RuntimeError):
    """Every request of a load failed: nothing is stored, and the message carries the client's
    first error and the engine's own error line (a crashed engine's last words)."""

    def __init__(self, load: Load, client_error: str | None, log: str = ""):
        from helpers.engine.startup_log import error_line

        engine = error_line(log) if log else None
        lines = [tr("Every request of the load ({label}) failed, so no row was stored.", label=load.label())]
        if client_error:
            lines.append(
                tr("First client error: {splitlines_last}", splitlines_last=client_error.strip().splitlines()[-1][:300])
            )
        if engine:
            lines.append(f"Engine: {engine}")
        lines.append(
            tr(
                "Try: read the engine's log (H.engine_for(config).log_path); a setting that the engine "
                "accepts at start-up may still fail at the first request."
            )
        )
        super().__init__("\n".join(lines))
        self.client_error, self.engine_line = client_error, engine
