"""Chapter 2's exercises: each kept-apart solution, run on recorded rows, passes its own check."""
import pytest

from helpers.claims import ch2
from tests.solutions import run_solution

# Recorded on the AMD EPYC (AVX-512, bf16) host at smoke size; rounded as the rows store them.
REF = {"node_memory_gib": 22.89, "non_kv_gib": 1.12, "kv_cache_gib": 4.6, "kv_cache_tokens": 214400,
       "cfg_max_model_len": 2048}
FULL_BYTES = 2 * 30 * 3 * 64 * 2  # SmolLM2-135M: 30 layers, 3 KV heads, head_dim 64, bf16
LOW_LINE = ("ValueError: Available memory on node 0 (20.1/22.89 GiB) on kv cache allocation is less than "
            "requested memory for kv (-0.56/0.56 GiB). Reduce CPU memory used by other processes.")


@pytest.fixture
def fixed_env():
    block = 128
    plan = ch2.fixed_cache_plan(block, 4096, 16, 64)
    short = {"peak_running": 10.0, "max_concurrency": 2.06, "repeats": 1}
    long = {"peak_running": 10.0, "max_concurrency": 1.03, "repeats": 1}
    return {"plan": plan, "block": block, "short": short, "long": long}


def test_q1_peak_running(fixed_env, capsys):
    env = run_solution("ch02_q1.py", {"plan": fixed_env["plan"], "block": fixed_env["block"]})
    q = ch2.q_peak_running(lambda: fixed_env["short"])
    assert q.check(env["answer_running"])
    assert not q.check(2.06) and "reported maximum concurrency" in capsys.readouterr().out


def test_q2_same_or_half(fixed_env):
    env = run_solution("ch02_q2.py", {"plan": fixed_env["plan"], "block": fixed_env["block"]})
    q = ch2.q_same_or_half(lambda: fixed_env["short"], lambda: fixed_env["long"])
    assert q.check(env["answer_doubled"])
    assert not q.check("about half")


def test_q3_kv_tokens_at_another_fraction(capsys):
    q3_fraction = 0.3
    kv_gib = q3_fraction * REF["node_memory_gib"] - REF["non_kv_gib"]  # what the engine would report
    q3_row = {"kv_cache_tokens": int(kv_gib * 2**30 / FULL_BYTES) // 128 * 128, "kv_cache_gib": round(kv_gib, 2)}
    env = run_solution("ch02_q3.py", {"q3_fraction": q3_fraction, "ref": REF, "full": FULL_BYTES})
    q = ch2.q_kv_tokens(lambda: q3_row, lambda: 30 * 9 * 2)
    assert q.check(env["answer"])
    assert not q.check(...) and "replace the ..." in capsys.readouterr().out


def test_q4_which_check():
    too_low = {"fraction": 0.024, "line": LOW_LINE}
    env = run_solution("ch02_q4.py", {"too_low": too_low, "ref": REF})
    assert ch2.q_which_check(lambda: too_low).check(env["answer"])


def test_q4_the_free_memory_answer_can_pass():
    """The option reads "free memory on the node"; failure_kind says "free memory"."""
    line = ("ValueError: Available memory on node 0 (20.1/22.89 GiB) on startup is less than desired CPU memory "
            "utilization (0.95, 21.75 GiB).")
    too_high = {"fraction": 0.95, "line": line}
    assert ch2.failure_kind(line) == "free memory"
    assert ch2.q_which_check(lambda: too_high).check("free memory on the node")
