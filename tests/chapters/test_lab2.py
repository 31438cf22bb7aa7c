"""Lab 2's home on recorded counters: its rule and its solutions, at vLLM's CPU and CUDA block sizes."""
import pytest

from helpers.chapters import lab2
from helpers.exercises import Question
from helpers.load import Load
from tests.solutions import run_solution

B = 128


def test_the_rule_counts_whole_blocks_of_a_shared_start():
    shared = Load(kind="prefix", num_prompts=8, prefix_len=2 * B, input_len=32, output_len=8, num_prefixes=1)
    assert lab2.rule(shared, B) == (7 * 2 * B, 8 * (2 * B + 32))
    short = Load(kind="prefix", num_prompts=8, prefix_len=B // 2, input_len=32, output_len=8, num_prefixes=1)
    assert lab2.rule(short, B)[0] == 0  # under one block: nothing to find
    sampled = Load(num_prompts=4, input_len=3 * B, output_len=8, n=4)
    assert lab2.rule(sampled, B) == (4 * 3 * 2 * B, 4 * 4 * 3 * B)  # (len - 1) // B full blocks per extra sample


def test_notes_say_where_the_engine_found_a_block_fewer():
    shared = Load(kind="prefix", num_prompts=8, prefix_len=2 * B, input_len=32, output_len=8, num_prefixes=1)
    rows = {"one template": {"prefix_cache_hits": 7 * 2 * B - B, "prefix_cache_queries": 8 * (2 * B + 32),
                             "prefix_cache_hit_rate": 0.8, "median_ttft_ms": 50.0}}
    table = lab2.summary({"one template": shared}, rows, B)
    lines = lab2.notes(table, B, 8)
    assert lines[0].startswith("- The rule gave the measured hits exactly for 0 of 1 designs")
    assert "1 block(s) fewer" in lines[1]


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
    for solution, name, rate in [("lab02_q1.py", "short", False), ("lab02_q2.py", "whole", False),
                                 ("lab02_q3.py", "two", True), ("lab02_q4.py", "part", False),
                                 ("lab02_q5.py", "twice", False)]:
        hits, queries = LAB2_RECORDED[B][name]
        want = hits / queries if rate else hits
        answer = run_solution(solution, dict(env))["answer"]
        assert Question(name, lambda: want, tol, "", solution).check(answer), (name, answer, want)
    # the classic mistake is caught: counting the first request as a hit is outside the tolerance
    whole = loads["whole"]
    assert not Question("whole", lambda: LAB2_RECORDED[B]["whole"][0], tol, "", "lab02_q2.py").check(
        whole.num_prompts * whole.prefix_len)
