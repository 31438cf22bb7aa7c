"""What every importer shares: the refusal, the file as read, and the small readers of values."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from helpers.results import roofline
from helpers.results.gaps import VLLM_SWEEP

# a run in which no request completed has no rate to compare: 0 tokens/s is not a measurement of the
# server's speed, and a ratio against it reads ×inf (gaps.missing then gives the reason)
NOTHING_COMPLETED = {"request_throughput": None, "output_throughput": None, "total_token_throughput": None}
LATENCY_KEY = re.compile(r"^(mean|median|std|p[\d.]+)_(ttft|tpot|itl|e2el)_ms$")


class ImportFileError(ValueError):
    """A file the guide cannot read: which file, which field, and what to try."""

    def __init__(self, path, what: str, fix: str):
        super().__init__(f"{Path(path).name}: {what}\nTry: {fix}")
        self.path = Path(path)


@dataclass(frozen=True)
class Source:
    """One file (or a sweep's folder) as read: its name, a hash of its bytes, its tool."""

    path: Path
    sha: str
    tool: str

    def base(self, index: int, version: str | None, when: str | None) -> dict:
        """What every imported row starts with. Its run id and key come from the file's bytes,
        so importing the same file twice adds nothing."""
        tag = f"imported · {self.tool}" + (f" · {self.path.name}" if self.tool == VLLM_SWEEP else "")
        return {"run_id": f"{self.sha[:10]}-{index}", "key": f"imported-{self.sha[:16]}-{index}", "kind": "load",
                "engine_location": "imported", "measurement_version": None, "tag": tag,
                "time": when or time.strftime("%Y-%m-%dT%H:%M:%S"), "import_tool": self.tool,
                "import_tool_version": version, "import_file": self.path.name,
                "env_env_id": f"imported-{self.sha[:10]}", "env_machine_id": None,
                **dict.fromkeys(roofline.COLUMNS)}  # a floor needs the serving machine's roofs: empty


def failures(row: dict, completed: int, failed: int, total: int) -> None:
    """Say in the row how many requests failed; with none completed, empty every figure."""
    if not completed:
        row.update({k: None for k in row if LATENCY_KEY.match(k)}, request_ttft_ms=None, request_tpot_ms=None,
                   max_itl_ms=None, **NOTHING_COMPLETED)
        row.update({k: None for k in row if k.startswith("vllm_rule_")})
        row["import_failures"] = f"no request completed: 0 of {total}"
    elif failed:
        row["import_failures"] = f"{failed} of {total} requests failed; the figures are the others'"


def stats(name: str, values: list[float]) -> dict:
    """Mean, median and p99 as vLLM's calculate_metrics computes them (numpy's linear percentile)."""
    if not values:
        return {f"{s}_{name}_ms": None for s in ("mean", "median", "p99")}
    import numpy as np

    return {f"mean_{name}_ms": float(np.mean(values)), f"median_{name}_ms": float(np.median(values)),
            f"p99_{name}_ms": float(np.percentile(values, 99))}


def load_label(load: dict) -> str:
    n_in = load["load_input_len"] or (f"~{load['mean_input_tokens']:.0f}" if load.get("mean_input_tokens") else "?")
    n_out = load["load_output_len"] or (f"~{load['mean_output_tokens']:.0f}" if load.get("mean_output_tokens") else "?")
    conc = load["load_max_concurrency"]
    rate = load["load_request_rate"]
    arrivals = f" ({load['import_strategy']})" if load.get("import_strategy") in ("constant", "poisson") else ""
    return (f"{load['load_num_prompts']} requests {n_in}→{n_out} tokens @ conc {conc or '∞'}"
            + (f", {rate:g} req/s{arrivals}" if rate else ""))


def date(value) -> str | None:
    if isinstance(value, (int, float)):
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(value))
    if isinstance(value, str) and re.fullmatch(r"\d{8}-\d{6}", value):  # vllm bench serve: 20261203-072516
        return f"{value[:4]}-{value[4:6]}-{value[6:8]}T{value[9:11]}:{value[11:13]}:{value[13:15]}"
    return None


def as_float(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def model_name(model_id):
    """`org/name` for a Hugging Face cache path (…/models--org--name/snapshots/<hash>/), whose last
    part is a commit hash that names nothing; any other model id as written."""
    m = re.search(r"models--([^/]+?)--([^/]+)/snapshots/[0-9a-f]+/?$", str(model_id or ""))
    return f"{m[1]}/{m[2]}" if m else model_id
