"""What makes the test run fast and countable, kept out of the learner's library: forked server
starts (`zygote`), the tempo log (`tempo`), and vLLM's benchmark client imported while a kernel's
first engine starts. `install()` runs in the pytest process and, through an IPython startup file
in the run's IPYTHONDIR (conftest.py), in every notebook kernel the run starts."""
from __future__ import annotations

import contextlib
import os


def import_client() -> None:
    """vLLM's benchmark client imports vLLM (6-10 s of one core); a load would otherwise import it
    after the start, with the engine idle. Beside a start it takes cores from it and lengthens
    start_seconds, so only in the merged layout, whose rows never match a learner's."""
    with contextlib.suppress(Exception):  # the load imports it again and reports any error itself
        import vllm.benchmarks.serve  # noqa: F401


def install() -> None:
    """Hook this process into the run: its server starts fork, its events reach the tempo log."""
    from helpers.engine import server, shared
    from tests.run import tempo, zygote
    server.start_processes_with(zygote.fork_start)
    if tempo.write not in shared.LISTENERS:
        shared.LISTENERS.append(tempo.write)
    if os.environ.get("GUIDE_ENGINE_LAYOUT") == "merged":
        server.beside_next_start(import_client)


def forbid_engines() -> None:
    """The quick tier (`bash guide.sh test --quick`): a test that starts an engine fails at once,
    saying which mark it lacks, instead of making the quick tier slow."""
    from helpers.engine import server

    def refuse(self, *args, **kwargs):
        raise RuntimeError(f"the quick tier starts no engine, and this test asked for one ({self.config.label()}): "
                           "mark it @pytest.mark.engine (or after_notebooks) so that only the whole suite runs it")

    server.Server.start = refuse
