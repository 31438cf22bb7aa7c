"""Chapter 4b's home on recorded rows: its rules and exercise 3 (the break-even)."""
import math

import pandas as pd

from helpers.chapters import ch4b
from helpers.verdicts import CANNOT_TELL, HELD, UNTESTED
from tests.solutions import run_solution


def _row(**kw):
    base = {"repeats": 1, "completed": 8, "peak_running": 8, "output_throughput": 100.0, "mean_e2el_ms": 2000.0,
            "total_input_tokens": 1000, "prefix_cache_hits": 0, "prefix_cache_hit_rate": 0.0, "median_ttft_ms": 400.0,
            "preemptions": 0, "num_blocks": 13, "block_size": 128, "load_prefix_len": 512, "load_num_prefixes": 1,
            "load_max_concurrency": 1, "start_seconds": 25.0, "mean_tpot_ms": 30.0}
    return {**base, **kw}


def _frame(rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows.values()), index=list(rows))


def test_streaming_advice_cannot_be_judged_here():
    claim = ch4b.streaming_claim()
    assert claim.verdict == UNTESTED and claim.evidence.startswith("cannot be judged here, because")
    assert "stream=True" in claim.evidence and "skip_special_tokens" in claim.text and claim.rule


def test_compile_break_even_and_claims():
    eager, compiled = _row(start_seconds=25, output_throughput=30), _row(start_seconds=75, output_throughput=40)
    # 50 s extra start, 1/30 - 1/40 = 1/120 s saved per token: 6000 tokens to catch up.
    assert math.isclose(ch4b.break_even_tokens(eager, compiled), 6000)
    assert ch4b.break_even_tokens(eager, _row(start_seconds=75, output_throughput=30)) == math.inf
    frame = _frame({"eager": _row(start_seconds=25, mean_tpot_ms=30),
                    "compiled": _row(start_seconds=75, mean_tpot_ms=20)})
    start, tpot, graphs = ch4b.compile_claims(frame)
    assert start.verdict == HELD and tpot.verdict == HELD and graphs.verdict == UNTESTED
    assert len(ch4b.compile_claims(frame, device="cuda")) == 3  # the graphs claim: not run, says why


def test_logging_claim():
    logs = _frame({"info": _row(output_throughput=100), "debug": _row(output_throughput=70)})
    assert ch4b.logging_claim(logs).verdict == HELD
    logs.loc["debug", "output_throughput"] = 97
    assert ch4b.logging_claim(logs).verdict == CANNOT_TELL


def test_q3_a_compiled_engine_that_started_first_was_never_behind(capsys):
    """The check said 0 where the solution's formula gave a negative count: both say 0 now."""
    eager_rows = {1: {"start_seconds": 40.0, "output_throughput": 26.2}}
    compiled_rows = {1: {"start_seconds": 30.0, "output_throughput": 33.2}}  # a cached compile: it started first
    q3 = ch4b.q_break_even(lambda: eager_rows[1], lambda: compiled_rows[1])
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    assert env["answer3"] == 0 == ch4b.break_even_tokens(eager_rows[1], compiled_rows[1]) and q3.check(env["answer3"])
    formula = (30.0 - 40.0) / (1 / 26.2 - 1 / 33.2)
    assert formula < 0 and not q3.check(formula)
    assert ch4b.NEVER_BEHIND in capsys.readouterr().out
    compiled_rows[1]["output_throughput"] = 20.0  # first, but slower: the eager one overtakes it later
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    capsys.readouterr()
    overtaken = (30.0 - 40.0) / (1 / 26.2 - 1 / 20.0)  # positive: where the eager engine overtakes it
    assert env["answer3"] == 0 and q3.check(0) and overtaken > 0 and not q3.check(overtaken)
    said = capsys.readouterr().out
    assert ch4b.OVERTAKEN in said and ch4b.NEVER_BEHIND not in said


def test_the_verdict_table_holds_every_claim_of_43_once():
    stages = _frame({"eager": _row(start_seconds=25, mean_tpot_ms=30),
                     "compiled": _row(start_seconds=75, mean_tpot_ms=20)})
    logs = _frame({"info": _row(output_throughput=100), "debug": _row(output_throughput=70)})
    compiling = ch4b.claims(stages, logs)
    assert [c.text[:3] for c in compiling] == ["4.3"] * 5 and compiling[-1].text == ch4b.streaming_claim().text
    assert [c.verdict for c in compiling] == [HELD, HELD, UNTESTED, HELD, UNTESTED]
    assert len(ch4b.claims(stages, logs, device="cuda")) == 5  # the graphs claim stays, judged or why not
    texts = [c.text for c in compiling]
    assert len(set(texts)) == len(texts)


def test_chapter4b_solution():
    eager_rows = {1: {"start_seconds": 26.6, "output_throughput": 26.2}}
    compiled_rows = {1: {"start_seconds": 75.7, "output_throughput": 33.2}}
    q3 = ch4b.q_break_even(lambda: eager_rows[1], lambda: compiled_rows[1])
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    assert q3.check(env["answer3"])
    assert not q3.check(49.1 / 7.0)  # the throughputs subtracted
    assert not q3.check(2 * env["answer3"])
    compiled_rows[1]["output_throughput"] = 20.0  # slower: it never catches up
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    assert math.isinf(env["answer3"]) and q3.check(env["answer3"])


def test_the_graphs_claim_is_judged_on_a_gpu_and_can_fail():
    from helpers import verdicts
    from helpers.chapters import ch4b
    assert ch4b.graphs_claim("cpu").verdict == verdicts.UNTESTED
    assert ch4b.graphs_claim("cuda", {}).verdict == verdicts.UNTESTED  # the NONE mode did not run
    row = lambda tpot: {"mean_tpot_ms": tpot, "repeats": 1}  # noqa: E731
    faster = {"cudagraph_mode=NONE": row(4.0), "default (vLLM's)": row(2.0)}
    assert ch4b.graphs_claim("cuda", faster).verdict == verdicts.HELD
    slower = {"cudagraph_mode=NONE": row(2.0), "default (vLLM's)": row(3.0)}
    assert ch4b.graphs_claim("cuda", slower).verdict == verdicts.NOT_HELD
    same = {"cudagraph_mode=NONE": row(2.0), "default (vLLM's)": row(2.1)}
    assert ch4b.graphs_claim("cuda", same).verdict in (verdicts.CANNOT_TELL, verdicts.NOISE)


def test_q3_a_later_and_slower_compiled_engine_never_catches_up(capsys):
    """This host's case: the compiled start 39 s later and slower; the formula's negative T is named."""
    eager, compiled = {"start_seconds": 10.0, "output_throughput": 59.8}, {"start_seconds": 49.3,
                                                                           "output_throughput": 55.3}
    q3 = ch4b.q_break_even(lambda: eager, lambda: compiled)
    negative = (49.3 - 10.0) / (1 / 59.8 - 1 / 55.3)
    assert negative < 0 and not q3.check(negative) and ch4b.LATER_AND_SLOWER in capsys.readouterr().out
    assert q3.check(float("inf"))
