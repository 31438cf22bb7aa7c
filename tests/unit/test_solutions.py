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
