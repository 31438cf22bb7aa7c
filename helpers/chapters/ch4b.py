"""Chapter 4b's home (compilation and logging): what notebook 04b measures, its panel, exercise 3's
expectation, and its claims with the rule that judges each from the rows it measured (`claims`).

The notebook passes its tables indexed by name:
  compiled  4.3: "eager" and "compiled" rows at the same, smallest client concurrency
  logging   4.3: "info" and "debug" (debug level and per-request logs)
"""
from __future__ import annotations

import math
from typing import Callable

import pandas as pd

from helpers import experiment, verdicts
from helpers.config import EngineConfig
from helpers.exercises import Question
from helpers.i18n import N_, tr
from helpers.load import Load
from helpers.verdicts import Claim

# -- designs: the loads it measures ------------------------------------------------------------------
CONCURRENCIES = (1, 4, 16)  # requests in flight in section 4.3's loads


def client_loads() -> dict:
    """Section 4.3's loads, {requests in flight: Load}: 64-token prompts, 16 output tokens (64 at
    full size), at least 4 requests."""
    from helpers.load import Load
    from helpers.run_size import smoke_or_full
    return {c: Load(num_prompts=max(4, c), input_len=64, output_len=smoke_or_full(16, 64), max_concurrency=c)
            for c in CONCURRENCIES}


# -- panels ------------------------------------------------------------------------------------------
def eager_or_compiled_panel(base: EngineConfig, compiled: EngineConfig, loads: dict[int, Load],
                      tag: str = "ch4-compile") -> Callable[..., dict]:
    """Chapter 4b: the eager or the compiled engine (optionally with a CUDA-graph mode) at a
    number of requests in flight (`loads` maps it to the load)."""
    def run(engine="compiled", concurrency=4, cudagraph_mode=None, force=False, progress=True) -> dict:
        cfg = base if engine == "eager" else compiled.replace(
            compilation_config={"cudagraph_mode": cudagraph_mode} if cudagraph_mode else None)
        return experiment.measure(cfg, loads[concurrency], force=force, progress=progress, tag=tag)
    return run


# -- checks: exercise 3 ------------------------------------------------------------------------------
def break_even_tokens(eager, compiled) -> float:
    """Output tokens after which a compiled engine has caught up with an eager one: the extra
    start time divided by the time it saves per token. 0 when it started no later (it had nothing to
    catch up; if it also runs slower, the eager engine overtakes it later, at the crossing the formula
    gives, which `break_even_mistakes` names); inf when it started later and saves nothing."""
    extra_start = compiled["start_seconds"] - eager["start_seconds"]
    saved_per_token = 1 / eager["output_throughput"] - 1 / compiled["output_throughput"]
    if extra_start <= 0:
        return 0.0
    return extra_start / saved_per_token if saved_per_token > 0 else math.inf


NEVER_BEHIND = N_("you divided although the compiled engine's start was the shorter one: it started ahead, so it "
                  "had caught up from the first token (0), not at the negative number the formula gives")
OVERTAKEN = N_("that is where the eager engine overtakes the compiled one (which started sooner but runs slower); "
               "the compiled engine started ahead, so it had caught up from the first token (0)")


LATER_AND_SLOWER = N_("a negative T is a crossing before either engine started: the compiled engine started later and "
                      "runs slower, so it never catches up (math.inf)")
THROUGHPUTS = N_("you subtracted the throughputs, not the times per token (1 / throughput)")
BY_TPOT = N_("you took mean TPOT as the time per token; the engine's time per output token is 1 / output "
             "throughput (TPOT leaves out the first token and the time between requests)")


def break_even_mistakes(eager, compiled) -> dict[str, float]:
    """Exercise 3's known mistakes and what each gives (NaN where it does not apply here)."""
    extra_start = compiled["start_seconds"] - eager["start_seconds"]
    saved_per_token = 1 / eager["output_throughput"] - 1 / compiled["output_throughput"]
    faster = compiled["output_throughput"] - eager["output_throughput"]
    tpot_saved = (eager.get("mean_tpot_ms") or 0) - (compiled.get("mean_tpot_ms") or 0)  # in ms
    return {NEVER_BEHIND: extra_start / saved_per_token if extra_start < 0 and saved_per_token > 0 else math.nan,
            OVERTAKEN: extra_start / saved_per_token if extra_start < 0 and saved_per_token < 0 else math.nan,
            LATER_AND_SLOWER: extra_start / saved_per_token if extra_start > 0 and saved_per_token < 0 else math.nan,
            THROUGHPUTS: extra_start / faster if extra_start > 0 and faster > 0 else math.nan,
            BY_TPOT: 1000 * extra_start / tpot_saved if extra_start > 0 and tpot_saved > 0 else math.nan}


def q_break_even(eager: Callable[[], dict], compiled: Callable[[], dict]) -> Question:
    """Exercise 3 (predict, then measure): the rows at one request in flight, read at check time."""
    return Question(
        "break-even output tokens at one in flight", lambda: break_even_tokens(eager(), compiled()), 0.02,
        "Extra start time ÷ time saved per token; the time per token is 1 / output_throughput. An engine that "
        "started sooner (a shorter start) had nothing to catch up.",
        "ch04_q3.py", unit="tokens",
        known_wrong={why: (lambda why=why: break_even_mistakes(eager(), compiled())[why])
                     for why in (NEVER_BEHIND, OVERTAKEN, LATER_AND_SLOWER, THROUGHPUTS, BY_TPOT)})


def catch_up_lines(eager: dict, compiled: dict) -> pd.DataFrame:
    """For each concurrency (the keys of both dicts of rows): time since start against output
    tokens served, `start + tokens / throughput`, for both engines, far enough to show the
    crossing (three times the break-even, or a fixed span where there is none)."""
    points = []
    for c in eager:
        even = break_even_tokens(eager[c], compiled[c])
        horizon = 3 * even if math.isfinite(even) and even > 0 else 20_000
        for name, row in (("eager", eager[c]), ("compiled", compiled[c])):
            for tokens in (0, horizon):
                points.append({"engine": name, "concurrency": f"{c} in flight", "output_tokens": tokens,
                               "seconds": row["start_seconds"] + tokens / row["output_throughput"]})
    return pd.DataFrame(points)


# -- claims and the rules that judge them ------------------------------------------------------------
def streaming_claim() -> Claim:
    """The article's 4.3 advice on streaming and `skip_special_tokens`. Not measured. Streaming off cannot
    be measured: vLLM's benchmark client, which sends every load here, sets "stream": True
    (`async_request_openai_completions` in `vllm/benchmarks/lib/endpoint_request_func.py`); an
    `--extra-body '{"stream": false}'` would override it, but the client then reads no chunk and counts
    every request as failed. `skip_special_tokens` is True by default (`SamplingParams`, the OpenAI request
    models); it could be turned off per request with `--extra-body` (`_update_payload_common` merges it
    into the payload), but the guide's loads do not send it, so no row ran without it."""
    return verdicts.untested(
        "4.3 Streaming and skip_special_tokens (the article's output advice)",
        tr("cannot be judged here, because no row runs without them: vLLM's benchmark client, which sends every "
           "load in this guide, streams (async_request_openai_completions sets stream=True; turned off through "
           "--extra-body, it reads no chunk and fails every request); skip_special_tokens is True by default "
           "(SamplingParams, CompletionRequest), and although --extra-body could turn it off per request, none of "
           "the guide's loads does"),
        rule=tr("would be judged on one load sent with and without streaming, and with skip_special_tokens on and "
                "off, on the same engine"))


def compile_claims(compiled: pd.DataFrame, device: str = "cpu", modes: dict | None = None) -> list[Claim]:
    eager, comp = compiled.loc["eager"], compiled.loc["compiled"]
    conc = f"{eager.load_max_concurrency:.0f} request(s) in flight"
    start_text = ("4.3 torch.compile makes the engine start slower" if device == "cpu" else
                  "4.3 torch.compile and CUDA graphs make the engine start slower")
    cache = comp.get("compile_cache")
    evidence = (tr("start {start_seconds:.0f} s eager vs {start_seconds_2:.0f} s compiled",
                   start_seconds=eager.start_seconds, start_seconds_2=comp.start_seconds)
                + (tr("; compile cache: {cache}", cache=cache) if cache else ""))
    if cache == "loaded":  # the compiled engine read its graphs from the cache: it skipped the compiling
        start = verdicts.untested(start_text, evidence + tr(": that start skipped compiling, so it cannot show "
                                                            "what compiling costs (a fresh cache folder would)"))
    else:
        # the claim gives no size: slower beyond the noise holds, and the factor is in the evidence
        start = verdicts.judge_change(start_text, eager, comp, "start_seconds", better="higher", held_at=1.0,
                                      evidence=evidence + f" (×{comp.start_seconds / eager.start_seconds:.2f})"
                                      if eager.start_seconds else evidence)
    return [
        start,
        verdicts.judge_change(
            "4.3 …and cuts the time per token of small batches", eager, comp, "mean_tpot_ms", better="lower",
            held_at=1.0, evidence=tr("mean TPOT at {conc}: {mean_tpot_ms:.1f} ms eager vs {mean_tpot_ms_2:.1f} ms "
                                     "compiled", conc=conc, mean_tpot_ms=eager.mean_tpot_ms,
                                     mean_tpot_ms_2=comp.mean_tpot_ms)),
        graphs_claim(device, modes),
    ]


GRAPHS = "4.3 CUDA graphs cut launch overhead for small batches"


def graphs_claim(device: str = "cpu", modes: dict | None = None) -> Claim:
    """On a GPU: the compiled engine with CUDA graphs (vLLM's default, FULL_AND_PIECEWISE) against the same
    compiled engine with `cudagraph_mode=NONE`, on mean TPOT at one request in flight: what graphs remove is
    the launch of every kernel of a step, one by one, from Python. Not judged on a CPU, or where a row is
    missing (the mode did not run)."""
    rule = verdicts.change_rule("lower", 1.0, verdicts.default_noise("mean_tpot_ms"))  # the rule judge_change uses
    if device == "cpu":
        return verdicts.untested(GRAPHS, tr("no CUDA GPU here: the CPU backend has no CUDA graphs "
                                            "(vllm/platforms/cpu.py empties the capture sizes)"), rule)
    none, graphs = (modes or {}).get("cudagraph_mode=NONE"), (modes or {}).get("default (vLLM's)")
    if none is None or graphs is None:
        return verdicts.untested(GRAPHS, tr("the compiled engine without CUDA graphs (cudagraph_mode=NONE) did not "
                                            "run here"), rule)
    return verdicts.judge_change(GRAPHS, none, graphs, "mean_tpot_ms", better="lower", held_at=1.0, rule=rule,
                                 evidence=tr("mean TPOT at one in flight: {mean_tpot_ms:.2f} ms compiled without "
                                             "graphs vs {mean_tpot_ms_2:.2f} ms with them (vLLM's default)",
                                             mean_tpot_ms=none['mean_tpot_ms'], mean_tpot_ms_2=graphs['mean_tpot_ms']))


def logging_claim(logging: pd.DataFrame) -> Claim:
    info, debug = logging.loc["info"], logging.loc["debug"]
    return verdicts.judge_change(
        "4.3 Debug logging costs throughput under load", info, debug, "output_throughput", better="lower",
        held_at=1.0, evidence=tr("{output_throughput:.0f} tokens/s at info vs {output_throughput_2:.0f} with debug "
                                 "level and per-request logs ({load_max_concurrency:.0f} in flight)",
                                 output_throughput=info.output_throughput, output_throughput_2=debug.output_throughput,
                                 load_max_concurrency=info.load_max_concurrency))


def claims(compiled, logging, device: str = "cpu", modes: dict | None = None) -> list[Claim]:
    """The notebook's verdict table (section 4.3): compiling, CUDA graphs (a GPU's `modes` rows), logging, and
    the output advice it cannot judge."""
    return [*compile_claims(compiled, device, modes), logging_claim(logging), streaming_claim()]


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ("CONCURRENCIES", "client_loads")
PANELS = ("eager_or_compiled_panel",)
CHECKS = ("break_even_tokens", "NEVER_BEHIND", "OVERTAKEN", "LATER_AND_SLOWER", "THROUGHPUTS", "BY_TPOT",
          "break_even_mistakes", "q_break_even", "catch_up_lines")
CLAIMS = ("streaming_claim", "compile_claims", "GRAPHS", "graphs_claim", "logging_claim", "claims")
