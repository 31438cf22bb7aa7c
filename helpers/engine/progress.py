"""What a learner sees while an engine starts (30-130 s here): a bar in Jupyter, a line per stage in
a terminal, or a widget panel's callback. The stages are the start-up log's (`startup_log.STAGES`)."""
from __future__ import annotations

import sys

from helpers.engine import startup_log


class StartProgress:
    """Progress for the 30-130 s start: a bar in Jupyter, a line per stage in a terminal,
    or a callback(stage_index, stage_name, elapsed_s) given by a widget panel."""

    def __init__(self, enabled, label: str):
        self.callback = enabled if callable(enabled) else None
        self.enabled, self.label, self.bar, self.last = bool(enabled), label, None, None
        if not enabled or self.callback:
            return
        if not _in_jupyter():
            return  # a terminal gets one line per stage instead
        try:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=len(startup_log.STAGES) - 1, desc=f"starting vLLM ({label})",
                            bar_format="{desc}: {n}/{total} stages |{bar}| {postfix}", leave=False)
        except Exception:  # noqa: BLE001 - a bar is a nicety; never fail a start for it
            self.bar = None

    def update(self, index: int, name: str, elapsed: float) -> None:
        if not self.enabled:
            return
        if self.callback:
            self.callback(index, name, elapsed)
        elif self.bar is not None:
            self.bar.n = index
            self.bar.set_postfix_str(f"{name}, {elapsed:.0f} s", refresh=True)
        elif (index, name) != self.last:
            print(f"  vLLM start: {name} ({elapsed:.0f} s)", file=sys.stderr, flush=True)
        self.last = (index, name)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _in_jupyter() -> bool:
    try:
        from IPython import get_ipython
        return get_ipython() is not None and "IPKernelApp" in get_ipython().config
    except Exception:  # noqa: BLE001
        return False
