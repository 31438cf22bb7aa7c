"""Each chapter's kept-apart solution, run on recorded rows, passes that chapter's check."""
import pytest

from helpers.exercises import Choice, Question
from helpers.slo import goodput
from helpers.load import Load
from tests.solutions import run_solution


def test_chapter0_solutions():
    runs = [{"duration": 10.0, "total_output_tokens": 1024, "request_ttft_ms": [500, 1500, 800],
             "request_tpot_ms": [40, 30, 60]}]
    first = {"output_throughput": 102.4, "total_output_tokens": 1024.0, "duration": 10.0, "mean_ttft_ms": 2000.0,
             "mean_tpot_ms": 50.0, "runs": runs}
    first_load = Load(num_prompts=16, input_len=256, output_len=64, max_concurrency=8)
    env = run_solution("ch00_q1.py", {"first": first})
    assert Question("t", lambda: first["output_throughput"], 0.02, "", "ch00_q1.py").check(env["throughput"])
    env = run_solution("ch00_q2.py", {"first": first, "first_load": first_load})
    assert Choice("c", ["first token", "the rest"], lambda: "the rest", "", "ch00_q2.py").check(env["prediction"])
    env = run_solution("ch00_q3.py", {"first": first})
    assert env["strict_goodput"] == goodput({"runs": runs}, 1000, 50) == 0.1


def test_chapter1_solutions():
    import pandas as pd
    ablation = pd.DataFrame({"p99_itl_ms": [1000.0, 950.0, 400.0, 380.0]},
                            index=["stock", "stock + max_model_len", "stock + budget", "tuned"])
    env = run_solution("ch01_q1.py", {"ablation": ablation})
    assert env["setting"] == "max_num_batched_tokens"
    ref = pd.Series({"kv_cache_gib": 2.0, "kv_cache_tokens": 100_000, "node_memory_gib": 20.0, "non_kv_gib": 3.0})
    env = run_solution("ch01_q3.py", {"ref": ref, "need_tokens": 50_000})
    from helpers.claims.ch1 import fraction_for
    assert Question("k", lambda: fraction_for(ref, 50_000), 0.03, "", "ch01_q3.py").check(env["knee_fraction"])


def test_chapter4_solutions():
    import math
    from helpers.claims import ch4

    one = Load(num_prompts=4, input_len=256, output_len=16, max_concurrency=4, temperature=1.0)
    env = run_solution("ch04_q1.py", {"sample_loads": {"n=1": one}})
    assert Question("q1", lambda: 16.0, 0.0, "", "ch04_q1.py").check(env["answer"])
    fixed = Load(kind="prefix", num_prompts=6, prefix_len=512, input_len=64, output_len=16, max_concurrency=4)
    measured = {"prefix_cache_hits": 2560.0, "total_input_tokens": 3456.0}  # this project's smoke run
    env = run_solution("ch04_q2.py", {"fixed": fixed, "block": 128})
    assert Question("q2", lambda: ch4.share_saved(measured), 0.05, "", "ch04_q2.py").check(env["answer"])
    eager_rows = {1: {"start_seconds": 26.6, "output_throughput": 26.2}}
    compiled_rows = {1: {"start_seconds": 75.7, "output_throughput": 33.2}}
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    want = ch4.break_even_tokens(eager_rows[1], compiled_rows[1])
    assert Question("q3", lambda: want, 0.02, "", "ch04_q3.py").check(env["answer3"])
    compiled_rows[1]["output_throughput"] = 20.0  # slower: it never catches up
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    assert math.isinf(env["answer3"]) and Question("q3", lambda: math.inf, 0.02, "", "ch04_q3.py").check(env["answer3"])

# Lab 2's counters, (hits, queries) per design, smoke size (8 requests). Block 128: measured on
# this project's CPU machine (vLLM 0.32). Block 16 (CUDA's block size) is not measured: the rule's
# counts, with one block lost in two prompts of "whole" and "two", as an offline replay of the
# benchmark's prompts through the tokenizer suggested (the text is re-split where prefix and
# suffix meet; a CPU run with a one-token suffix lost a block that way), and the few extra query
# tokens that re-split gives. That is the case the lab's 5% tolerance is for.
LAB2_RECORDED = {
    128: {"short": (0, 1026), "whole": (3584, 4608), "two": (3072, 4608), "part": (1792, 3072), "twice": (1024, 4096)},
    16: {"short": (0, 128), "whole": (432, 576), "two": (368, 576), "part": (224, 388), "twice": (128, 512)},
}


@pytest.mark.parametrize("B", sorted(LAB2_RECORDED))
def test_lab2_solutions(capsys, B):
    N, tol = 8, 0.05  # as in the lab (smoke size; TOL)
    loads = {"short": Load(kind="prefix", num_prompts=N, prefix_len=B // 2, input_len=B // 2, output_len=8,
                           num_prefixes=1, max_concurrency=4),
             "whole": Load(kind="prefix", num_prompts=N, prefix_len=4 * B, input_len=B // 2, output_len=8,
                           num_prefixes=1, max_concurrency=4),
             "two": Load(kind="prefix", num_prompts=N, prefix_len=4 * B, input_len=B // 2, output_len=8,
                         num_prefixes=2, max_concurrency=4),
             "part": Load(kind="prefix", num_prompts=N, prefix_len=5 * B // 2, input_len=B // 2, output_len=8,
                          num_prefixes=1, max_concurrency=4),
             "twice": Load(kind="random", num_prompts=N, input_len=2 * B, output_len=8, max_concurrency=4, n=2,
                           temperature=1.0)}
    env = {"B": B, "N": N, **loads}
    for q, (name, rate) in enumerate([("short", False), ("whole", False), ("two", True), ("part", False),
                                      ("twice", False)], start=1):
        hits, queries = LAB2_RECORDED[B][name]
        want = hits / queries if rate else hits
        answer = run_solution(f"lab02_q{q}.py", dict(env))["answer"]
        assert Question(name, lambda: want, tol, "", f"lab02_q{q}.py").check(answer), (name, answer, want)
    # the classic mistake is caught: counting the first request as a hit is outside the tolerance
    whole = loads["whole"]
    assert not Question("whole", lambda: LAB2_RECORDED[B]["whole"][0], tol, "", "lab02_q2.py").check(
        whole.num_prompts * whole.prefix_len)


def test_chapter5_solutions():
    import pandas as pd
    shape = {"num_hidden_layers": 30, "num_key_value_heads": 3, "head_dim": 64}
    env = run_solution("ch05_q1.py", {"shape": shape, "kv_bytes": 24 * 128 * 23040})
    assert Question("q1", lambda: 6144.0, 0.05, "", "ch05_q1.py").check(env["answer"])
    weights = pd.DataFrame({"non_kv_gib": [1.08, 0.91], "kv_cache_gib": [3.85, 4.0],
                            "kv_cache_tokens": [174976, 183040]}, index=["bf16", "int4"])
    env = run_solution("ch05_q2.py", {"weights": weights, "small": "int4"})
    assert Question("q2", lambda: 183040 - 174976, 0.25, "", "ch05_q2.py").check(env["answer"])
    parallel = pd.DataFrame({"mean_tpot_ms": [13.7, 29.2]}, index=["TP=1", "TP=2"])
    env = run_solution("ch05_q3.py", {"parallel": parallel})
    assert Choice("q3", ["TP=1", "TP=2"], lambda: "TP=1", "", "ch05_q3.py").check(env["answer3"])

# Lab 3's engine rows, as measured on this project's 2-core AMD EPYC (AVX-512, bf16; vLLM 0.32,
# memory fraction 0.25 of a 16.84 GiB node), and the two models' config.json shapes.
LAB3_SHAPE = {"num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64}
LAB3_SYN = {"num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64}
LAB3_ROWS = {"base": {"kv_cache_gib": 3.13, "kv_cache_tokens": 145_792, "non_kv_gib": 1.08},
             "fp8": {"kv_cache_gib": 3.13, "kv_cache_tokens": 291_584, "non_kv_gib": 1.08},
             "tp1": {"kv_cache_gib": 3.38, "kv_cache_tokens": 442_368, "non_kv_gib": 0.83},
             "tp2": {"kv_cache_gib": 3.47, "kv_cache_tokens": 909_312, "non_kv_gib": 0.74}}
GIB = 2**30


def test_lab3_capacity_solutions(capsys):
    from helpers.config import EngineConfig
    rows, per_number = LAB3_ROWS, 2  # bf16 KV
    env = {"shape": LAB3_SHAPE, "syn": LAB3_SYN, "per_number": per_number, "syn_per_number": per_number, "GIB": GIB,
           "base": rows["base"], "tp1": rows["tp1"],
           "tp2_cfg": EngineConfig(device="cpu", model="synthetic-tp", tensor_parallel_size=2)}
    per_token = lambda row: row["kv_cache_gib"] * GIB / row["kv_cache_tokens"]
    # the lab's checks and tolerances: Q1 3 %, Q2 5 %, Q3 5 %, Q4 10 %
    q1 = run_solution("lab03_q1.py", dict(env))["answer"]
    assert Question("q1", lambda: per_token(rows["base"]) / LAB3_SHAPE["num_hidden_layers"], 0.03, "",
                    "lab03_q1.py").check(q1)
    q2 = run_solution("lab03_q2.py", dict(env))["answer"]
    assert Question("q2", lambda: rows["fp8"]["kv_cache_tokens"], 0.05, "", "lab03_q2.py").check(q2)
    q3 = run_solution("lab03_q3.py", dict(env))["heads_per_rank"]
    from helpers.claims import lab3
    heads = lab3.kv_heads_per_rank(rows["tp2"], LAB3_SYN, per_number)  # what the lab checks Q3 against
    assert q3 == 2 and Question("q3", lambda: heads, 0.05, "", "lab03_q3.py").check(q3)
    q4 = run_solution("lab03_q4.py", dict(env))["tp2_tokens"]
    assert Question("q4", lambda: rows["tp2"]["kv_cache_tokens"], 0.10, "", "lab03_q4.py").check(q4)
    # the mistakes the lab names are outside its tolerances
    assert not Question("q2", lambda: rows["fp8"]["kv_cache_tokens"], 0.05, "", "lab03_q2.py").check(
        rows["base"]["kv_cache_tokens"])
    assert not Question("q4", lambda: rows["tp2"]["kv_cache_tokens"], 0.10, "", "lab03_q4.py").check(
        rows["tp1"]["kv_cache_tokens"])
    assert not Question("q3", lambda: heads, 0.05, "", "lab03_q3.py").check(LAB3_SYN["num_attention_heads"] / 2)


@pytest.mark.parametrize("figures, one_user, eight_users", [
    # (median TPOT ms, output tok/s) per layout. The first: TP=1 and TP=2 as measured on this project's
    # machine (one repeat each; TP=1 stepped faster, TP=2 computed on both cores); the others made up
    ({"TP=1": (11.9, 355.0), "TP=2": (14.4, 442.1)}, "TP=1", "TP=2"),
    ({"TP=1": (12.0, 400.0), "TP=2": (12.5, 420.0)}, "too close to call", "too close to call"),  # within 10 %
    ({"TP=1": (15.0, 300.0), "TP=2": (11.0, 500.0), "two replicas": (14.0, 480.0)}, "TP=2", "too close to call"),
    ({"TP=1": (12.0, 300.0), "TP=2": (15.0, 400.0), "two replicas": (13.5, 520.0)}, "TP=1", "two replicas"),
])
def test_lab3_choice_solutions(capsys, figures, one_user, eight_users):
    from helpers import report
    measured = {(option, target): {"median_tpot_ms": tpot, "output_throughput": tput, "repeats": 1}
                for option, (tpot, tput) in figures.items() for target in ("one user", "eight users")}
    options = [*figures, "too close to call"]
    env = {"measured": measured, "report": report, "LAYOUTS": dict.fromkeys(figures)}
    from helpers.claims import lab3
    assert (lab3.winner(measured, list(figures), "one user"), lab3.winner(measured, list(figures), "eight users")) \
        == (one_user, eight_users)  # the lab's own rule agrees with the solution files
    got = run_solution("lab03_q5.py", dict(env))["one_user_choice"]
    assert Choice("q5", options, lambda: one_user, "", "lab03_q5.py").check(got)
    got = run_solution("lab03_q6.py", dict(env))["eight_users_choice"]
    assert Choice("q6", options, lambda: eight_users, "", "lab03_q6.py").check(got)


def test_chapter6_solutions():
    from helpers.config import EngineConfig
    from helpers.slo import SLO

    base, cap = EngineConfig(), {"kv_cache_tokens": 223872, "max_concurrency": 109.3125}
    env = run_solution("ch06_q1.py", {"cap": cap, "base": base})
    assert Question("q1", lambda: cap["max_concurrency"], 0.01, "", "ch06_q1.py").check(env["answer"])
    slo = SLO(1600, 65)
    row = {"runs": [{"request_ttft_ms": [100, 2000, 300, 400], "request_tpot_ms": [50, 50, 70, 60], "duration": 4.0}]}
    env = run_solution("ch06_q2.py", {"baseline_row": row, "slo": slo})
    assert env["answer"] == slo.goodput(row) == 0.5
    backfire = {"default budget": {"median_ttft_ms": 1000.0}, "tiny chunks": {"median_ttft_ms": 1500.0}}
    env = run_solution("ch06_q3.py", {"backfire": backfire})
    assert env["answer3"] == "yes"
