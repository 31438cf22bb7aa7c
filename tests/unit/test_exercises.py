"""The exercise machinery (`Question`, `Choice`): known wrong answers are explained, and a row's own
settings are read where the engine reported them. Each chapter's exercises: tests/chapters/."""
import pytest

from helpers.exercises import Question
from helpers.results import rows


@pytest.mark.parametrize("row, n", [
    ({"engine_dtype": "torch.bfloat16", "engine_kv_cache_dtype": "auto"}, 2),
    ({"engine_dtype": "torch.float32", "engine_kv_cache_dtype": "auto"}, 4),
    ({"engine_dtype": "torch.float32", "engine_kv_cache_dtype": "fp8_e4m3"}, 1),
    ({"cfg_dtype": "float32", "cfg_kv_cache_dtype": "auto"}, 4),
])
def test_kv_bytes_per_number(row, n):
    assert rows.kv_bytes_per_number(row) == n


def test_a_setting_is_the_engines_value_where_the_row_has_it():
    assert rows.setting({"engine_max_num_seqs": 128, "cfg_max_num_seqs": None}, "max_num_seqs") == 128
    assert rows.setting({"engine_max_num_seqs": None, "cfg_max_num_seqs": 8}, "max_num_seqs") == 8
    assert rows.setting({"engine_enable_prefix_caching": False, "cfg_enable_prefix_caching": True},
                        "enable_prefix_caching") is False
    assert rows.setting({}, "max_num_seqs") is None


def test_known_wrong_answer_is_explained(capsys):
    q = Question("bytes", lambda: 23040, 0.001, "h", "lab01_q1.py", known_wrong={"you forgot ×2": lambda: 11520})
    assert not q.check(11520)
    assert "you forgot ×2" in capsys.readouterr().out
    assert not q.check(...)
    assert "replace the ..." in capsys.readouterr().out
    q.hint()
    assert "Hint" in capsys.readouterr().out


def test_a_wrong_answer_to_a_question_whose_value_is_zero_is_told_not_raised(capsys):
    from helpers.exercises import Question
    q = Question("zero", lambda: 0.0, 0.1, "hint", "none.py")
    assert q.check(3) is False and "not 0" in capsys.readouterr().out
    assert q.check(0) is True


def test_a_check_with_no_expectation_says_it_cannot_check(capsys):
    from helpers.exercises import Choice, Question
    assert not Question("q", lambda: None, 0.1, "", "ch07_q1.py").check(1.0)
    assert "cannot be checked here" in capsys.readouterr().out
    assert not Choice("c", ["yes", "no"], lambda: None, "", "lab05_q5.py").check("yes")
    assert "cannot be checked here" in capsys.readouterr().out


def test_never_passes_only_as_never(capsys):
    """An expected answer of math.inf ("it never catches up") is not "within 2 %" of every finite number."""
    import math

    from helpers.exercises import Question
    q = Question("break-even", lambda: math.inf, 0.02, "", "ch04_q3.py", unit="tokens")
    assert q.check(math.inf)
    assert not q.check(12345) and "math.inf" in capsys.readouterr().out
    assert not q.check(-18000)


def test_two_mistakes_that_give_the_same_number_are_both_named(capsys):
    """Lab 3's synthetic model: 8 attention heads / 2 = 4 = its KV heads; either slip gives 4."""
    q = Question("heads", lambda: 2.0, 0.05, "", "x.py",
                 known_wrong={"you split the attention heads": lambda: 4.0, "you kept every KV head": lambda: 4.0})
    assert not q.check(4)
    out = capsys.readouterr().out
    assert "you split the attention heads, or if you kept every KV head" in out


def test_a_choice_whose_expectation_cannot_be_judged_rejects_no_answer_as_wrong(capsys):
    from helpers.exercises import Choice
    for want in ("not measured here", "no data"):  # a verdict or a reading outside the options
        q = Choice("c", ["held", "did not hold"], lambda w=want: w, "", "x.py")
        assert not q.check("held") and "cannot be checked here" in capsys.readouterr().out


def test_every_mistake_within_the_answers_last_digit_is_named(capsys):
    """Pass 11's case: lab 5 Q4's 10.9 lies within a digit of two slips, so both are named."""
    q = Question("cross", lambda: 10.63, 0.1, "", "x.py",
                 known_wrong={"KV heads": lambda: 10.925, "q·k only": lambda: 10.85})
    assert not q.check(10.9)
    out = capsys.readouterr().out
    assert "KV heads" in out and "q·k only" in out


def test_a_right_answer_rounded_too_far_is_asked_for_digits_not_sent_to_the_hint(capsys):
    q = Question("floor", lambda: 3.3412, 0.05, "", "x.py", known_wrong={"median": lambda: 3.36})
    assert not q.check(3.3)
    assert "more significant digits" in capsys.readouterr().out
    # a named mistake within 0.5 % of the right answer is not a mistake one can name: it passes
    q = Question("floor", lambda: 3.3412, 0.05, "", "x.py", known_wrong={"median": lambda: 3.3477})
    assert q.check(3.3477)


def test_a_choice_that_cannot_be_checked_says_so_to_an_answer_of_none(capsys):
    """Pass 12: chapter 5's solution answers None where no pace was seen; that is not "left blank"."""
    from helpers.exercises import Choice
    q = Choice("faster", ["TP=1", "TP=2"], lambda: None, "", "ch05_q3.py")
    assert not q.check(None)
    assert "cannot be checked here" in capsys.readouterr().out
    q = Choice("faster", ["TP=1", "TP=2"], lambda: "TP=1", "", "ch05_q3.py")
    assert not q.check(...)
    assert "replace the ..." in capsys.readouterr().out
