"""Each chapter's kept-apart solution, run on recorded rows, passes that chapter's check."""
from helpers import exercises
from helpers.exercises import Choice, Question
from helpers.experiment import goodput
from helpers.load import Load


def run_solution(name: str, env: dict) -> dict:
    exec(exercises.solution_path(name).read_text(), env)
    return env


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
    from helpers.experiment import fraction_for
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
    assert Question("q3", lambda: want, 0.02, "", "ch04_q3.py").check(env["answer"])
    compiled_rows[1]["output_throughput"] = 20.0  # slower: it never catches up
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    assert math.isinf(env["answer"]) and Question("q3", lambda: math.inf, 0.02, "", "ch04_q3.py").check(env["answer"])
