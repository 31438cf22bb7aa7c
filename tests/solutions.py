"""What every exercise test does: run a kept-apart solution file in a namespace of recorded rows."""
from helpers import exercises


def run_solution(name: str, env: dict) -> dict:
    """Execute solution `name` (labs/solutions or notebooks/solutions) in `env`; returns `env`."""
    exec(exercises.solution_path(name).read_text(), env)
    return env
