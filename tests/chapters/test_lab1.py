"""Lab 1's exercises on recorded rows (an AVX-512 and an AVX2 CPU): the solutions pass the lab's checks."""
import pytest

from helpers import models
from helpers.exercises import Question
from helpers.results import rows
from tests.solutions import run_solution


@pytest.mark.parametrize("auto, second, second_tokens", [
    # an AVX-512 CPU: bf16 engine, then fp8 KV (recorded rows)
    ({"engine_dtype": "torch.bfloat16", "engine_kv_cache_dtype": "auto"}, {"engine_kv_cache_dtype": "fp8"}, 107776),
    # an AVX2 CPU: the guide's float32 engine, then dtype=bfloat16
    ({"engine_dtype": "torch.float32", "engine_kv_cache_dtype": "auto"},
     {"engine_dtype": "torch.bfloat16", "engine_kv_cache_dtype": "auto"}, 107776),
])
def test_solution_files_pass_their_checks(capsys, auto, second, second_tokens):
    MODEL = "embedded"
    auto_row = {"kv_cache_tokens": 53888, "cfg_max_model_len": 2048, "max_concurrency": 26.31, "kv_cache_gib": 1.16,
                **auto}
    second_row = {"kv_cache_tokens": second_tokens, "kv_cache_gib": 1.16, **second}
    env = {"models": models, "MODEL": MODEL, "auto_row": auto_row, "second_row": second_row,
           "first_bytes": rows.kv_bytes_per_number(auto_row), "second_bytes": rows.kv_bytes_per_number(second_row)}
    for name in ("lab01_q1.py", "lab01_q2.py", "lab01_q3.py"):
        run_solution(name, env)
    assert env["bytes_per_token"] == 23040
    assert Question("q2", lambda: auto_row["max_concurrency"], 0.01, "", "lab01_q2.py").check(env["max_sequences"])
    assert Question("q3", lambda: second_row["kv_cache_tokens"], 0.05, "", "lab01_q3.py").check(env["second_tokens"])


def test_q1_counts_key_and_value_for_each_kv_head_and_names_the_usual_mistakes(capsys):
    from helpers.chapters import lab1
    shape = {"num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64}
    assert lab1.kv_bytes_from_shape(shape) == 23040 and lab1.kv_bytes_from_shape(shape, 4) == 46080
    q1 = Question("bytes per token", lambda: lab1.kv_bytes_from_shape(shape), 0.001, "", "lab01_q1.py",
                  known_wrong=lab1.known_wrong_bytes(shape))
    for why, wrong in lab1.known_wrong_bytes(shape).items():
        assert not q1.check(wrong()) and why in capsys.readouterr().out
