"""The lab's self-checks: the kept-apart solutions pass, known wrong answers are explained."""
from helpers import exercises, models
from helpers.exercises import Question


def test_solution_files_pass_their_checks(capsys):
    MODEL = "embedded"
    auto_row = {"kv_cache_tokens": 53888, "cfg_max_model_len": 2048, "max_concurrency": 26.31, "kv_cache_gib": 1.16}
    fp8_row = {"kv_cache_tokens": 107776, "kv_cache_gib": 1.16}
    env = {"models": models, "MODEL": MODEL, "auto_row": auto_row, "fp8_row": fp8_row}
    for name in ("lab01_q1.py", "lab01_q2.py", "lab01_q3.py"):
        exec((exercises.SOLUTIONS / name).read_text(), env)
    assert env["bytes_per_token"] == 23040
    assert Question("q2", lambda: auto_row["max_concurrency"], 0.01, "", "lab01_q2.py").check(env["max_sequences"])
    assert Question("q3", lambda: fp8_row["kv_cache_tokens"], 0.05, "", "lab01_q3.py").check(env["fp8_tokens"])


def test_known_wrong_answer_is_explained(capsys):
    q = Question("bytes", lambda: 23040, 0.001, "h", "lab01_q1.py", known_wrong={"you forgot ×2": lambda: 11520})
    assert not q.check(11520)
    assert "you forgot ×2" in capsys.readouterr().out
    assert not q.check(...)
    assert "replace the ..." in capsys.readouterr().out
    q.hint()
    assert "Hint" in capsys.readouterr().out
