"""Load definitions and the benchmark arguments they become."""

import math

import pytest

from helpers.load import workloads as load_mod
from helpers.load.workloads import Load, LoadError, argv_for


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "bogus"},
        {"num_prompts": 0},
        {"input_len": 0},
        {"output_len": -1},
        {"max_concurrency": 0},
        {"kind": "prefix", "prefix_len": 0},
        {"kind": "prefix", "prefix_len": 64, "num_prefixes": 0},
        {"kind": "prefix", "prefix_len": 64, "num_prompts": 6, "num_prefixes": 8},
    ],
)
def test_bad_load(kwargs):
    with pytest.raises(LoadError):
        Load(**kwargs)


def test_good_loads():
    assert Load(max_concurrency=None).max_concurrency is None  # all at once
    prefix = Load(kind="prefix", prefix_len=64)
    assert prefix.longest_prompt() == 64 + prefix.input_len + prefix.output_len
    mixed = Load(kind="mixed")
    assert mixed.longest_prompt() >= mixed.long_input_len


def _value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_argv_for_prefix():
    argv = argv_for(
        Load(
            kind="prefix", num_prompts=8, prefix_len=512, input_len=32, output_len=16, num_prefixes=3, max_concurrency=4
        )
    )
    assert _value(argv, "--dataset-name") == "prefix_repetition"
    assert _value(argv, "--prefix-repetition-prefix-len") == "512"
    assert _value(argv, "--prefix-repetition-suffix-len") == "32"
    assert _value(argv, "--prefix-repetition-num-prefixes") == "3"
    assert _value(argv, "--prefix-repetition-output-len") == "16"
    assert _value(argv, "--num-prompts") == "8"
    assert _value(argv, "--max-concurrency") == "4"


def test_argv_for_random():
    argv = argv_for(Load(input_len=100, output_len=10, max_concurrency=None, request_rate=2.5))
    assert _value(argv, "--dataset-name") == "random"
    assert _value(argv, "--random-input-len") == "100"
    assert _value(argv, "--random-output-len") == "10"
    assert _value(argv, "--request-rate") == "2.5"
    assert "--max-concurrency" not in argv


def test_longest_prompt():
    assert Load(input_len=256, output_len=64).longest_prompt() == 320
    assert Load(kind="prefix", prefix_len=100, input_len=256, output_len=64).longest_prompt() == 420
    assert (
        Load(kind="mixed", input_len=256, output_len=64, long_input_len=1200, long_output_len=16).longest_prompt()
        == 1216
    )
    assert (
        Load(kind="mixed", input_len=2000, output_len=64, long_input_len=100, long_output_len=16).longest_prompt()
        == 2064
    )


def test_as_dict_and_label():
    assert Load().as_dict()["request_rate"] is None  # inf is not JSON
    assert Load(request_rate=4.0).as_dict()["request_rate"] == 4.0
    for kind, extra in (("random", {}), ("prefix", {"prefix_len": 8}), ("mixed", {})):
        assert Load(kind=kind, **extra).label()


# -- vLLM's own parser accepts what we build (imports vllm.benchmarks.serve once) -----------


@pytest.fixture(scope="module")
def bench_args():
    pytest.importorskip("vllm.benchmarks.serve")
    return lambda argv, progress=False: load_mod._bench_args("http://127.0.0.1:9", "/models/m", argv, progress)


def test_bench_args_random(bench_args):
    ns = bench_args(argv_for(Load(num_prompts=5, input_len=100, output_len=10, max_concurrency=3)))
    assert ns.dataset_name == "random"
    assert (ns.num_prompts, ns.random_input_len, ns.random_output_len) == (5, 100, 10)
    assert ns.max_concurrency == 3
    assert math.isinf(ns.request_rate)
    assert ns.base_url == "http://127.0.0.1:9"
    assert ns.model == ns.tokenizer == "/models/m"
    assert ns.ignore_eos and ns.disable_tqdm
    assert ns.endpoint == "/v1/completions"


def test_bench_args_prefix(bench_args):
    ns = bench_args(
        argv_for(Load(kind="prefix", prefix_len=512, input_len=32, output_len=16, num_prefixes=3, request_rate=1.5)),
        progress=True,
    )
    assert ns.dataset_name == "prefix_repetition"
    assert ns.prefix_repetition_prefix_len == 512
    assert ns.prefix_repetition_suffix_len == 32
    assert ns.prefix_repetition_num_prefixes == 3
    assert ns.prefix_repetition_output_len == 16
    assert ns.request_rate == 1.5
    assert not ns.disable_tqdm


def test_bench_args_mixed_parts(bench_args):
    # The mixed load's two clients: no concurrency cap, all at once.
    ns = bench_args(load_mod._random_argv(4, 1200, 16, None, math.inf, 1))
    assert ns.max_concurrency is None
    assert ns.random_input_len == 1200
    assert ns.seed == 1


def test_repeats_get_fresh_prompts_of_the_same_shape():
    load = Load(kind="prefix", num_prompts=8, prefix_len=256, input_len=32, output_len=8, max_concurrency=4)
    assert load.repeat(0) == load
    again = load.repeat(2)
    assert again.seed != load.seed and again.as_dict() | {"seed": load.seed} == load.as_dict()


def test_warmup_is_short_and_never_a_counted_prompt():
    load = Load(num_prompts=32, input_len=256, output_len=64, max_concurrency=8)
    w = load.warmup()
    assert w.kind == "random" and w.input_len == 256 and w.num_prompts == 2 and w.output_len <= 8
    assert w.seed not in {load.repeat(i).seed for i in range(10)}
    p = Load(kind="prefix", num_prompts=4, prefix_len=512, input_len=32, output_len=8, max_concurrency=None).warmup()
    assert p.kind == "random" and p.input_len == 256  # capped; no shared prefix: the cache stays cold
    big = Load(num_prompts=16, input_len=1024, output_len=32, max_concurrency=16).warmup()
    assert big.num_prompts * big.input_len <= 2 * 256  # cheap next to the load it prepares


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n": 0}, r"Load\.n \(samples per request\).*got 0.*Try: n=1"),
        ({"n": 2.5}, r"Load\.n"),
        ({"kind": "mixed", "n": 4}, "random and prefix loads"),
        ({"temperature": -1}, "temperature"),
    ],
)
def test_bad_sampling_is_refused_with_a_fix(kwargs, match):
    with pytest.raises(LoadError, match=match):
        Load(**kwargs)


def test_samples_travel_in_the_request_body():
    import json

    argv = argv_for(Load(n=4, temperature=1.0))
    assert json.loads(_value(argv, "--extra-body")) == {"n": 4}
    assert _value(argv, "--temperature") == "1.0" and argv.count("--temperature") == 1
    greedy = argv_for(Load(kind="prefix", prefix_len=64))
    assert "--extra-body" not in greedy and _value(greedy, "--temperature") == "0.0"
    assert "n=4, T=1" in Load(n=4, temperature=1.0).label()
    assert Load(n=4).peak_kv_tokens(128) == 4 * Load().peak_kv_tokens(128)


def test_an_interrupt_cancels_the_clients_at_once(monkeypatch, capsys):
    """Jupyter's stop button raises KeyboardInterrupt in the kernel's main thread: run_load cancels
    its clients' requests (here: a client that would wait a minute) instead of waiting for them."""
    import asyncio
    import os
    import signal
    import threading
    import time

    import vllm.benchmarks.serve as serve

    from helpers.load import workloads

    cancelled = threading.Event()

    async def endless(args):
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    monkeypatch.setattr(serve, "main_async", endless)
    # As ipykernel does while a cell runs: a run started with SIGINT ignored (a background job of a
    # non-interactive shell, as CI runners start it) would otherwise never turn the timer's SIGINT
    # into a KeyboardInterrupt.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for kind in ("random", "mixed"):
            cancelled.clear()
            timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            t0 = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                workloads.run_load(
                    "http://127.0.0.1:9", "m", workloads.Load(kind=kind, long_delay_s=0.1), progress=False
                )
            assert cancelled.wait(5) and time.monotonic() - t0 < 30, kind  # 60 s if the client were waited for
            assert "[load] stopped after" in capsys.readouterr().out
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_mixed_load_records_whether_the_long_prompts_met_a_short_answer():
    from helpers.load.workloads import collision
    from helpers.results import rows

    shorts = {"duration": 2.0, "ttfts": [0.1, 0.1, 0.1], "latencies": [1.0, 1.9, 2.0]}
    met = collision(shorts, {"duration": 2.0}, end_s=12.0, end_l=13.5)  # longs sent 1.5 s after the shorts
    assert met == {"long_start_s": 1.5, "shorts_in_flight_at_long": 2}
    late = collision(shorts, {"duration": 2.0}, end_s=12.0, end_l=14.1)  # 2.1 s: every short had ended
    assert late["shorts_in_flight_at_long"] == 0
    assert rows.no_collision({"config_label": "a", **met}) is None
    assert "stalled nobody" in rows.no_collision({"config_label": "a", **met}, {"config_label": "b", **late})
    assert rows.no_collision({"config_label": "old row"}) is None  # measured before it was recorded


def test_the_long_prompts_wait_for_every_short_requests_first_token(monkeypatch):
    """The trigger counts requests with a first token (the TTFT histogram), read from a recorded page."""
    import urllib.request
    from pathlib import Path

    from helpers.load import workloads
    page = (Path(__file__).parents[1] / "data" / "metrics_idle.txt").read_text()
    counts = iter([0.0, 3.0, 8.0])

    class Reply:
        def __init__(self, n):
            self.text = "\n".join(
                (ln.rsplit(" ", 1)[0] + f" {n}") if ln.startswith("vllm:time_to_first_token_seconds_count") else ln
                for ln in page.splitlines()) + "\n"

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def read(self):
            return self.text.encode()

    monkeypatch.setattr(urllib.request, "urlopen", lambda req, timeout=2: Reply(next(counts)))
    ready = workloads._shorts_decoding("http://127.0.0.1:1", 8, None)
    assert ready is not None and not ready() and ready()  # 3 of 8 shorts, then all 8, have a first token
