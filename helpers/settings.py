"""What a setting is: how it travels to vLLM, what it may be, how it is named and read back.

Each engine setting is declared once, on its `EngineConfig` field (helpers/config.py), with
`declare(default, fix, ...)`: the field gives the name, the kind and whether None is allowed
(from its type, as vLLM's `EngineArgs.get_kwargs` reads a dataclass field); the `Setting` in
its metadata gives the rest: how the value travels (a command-line flag or an environment
variable), range and choices, how charts name it (legend label, axis title with unit), where
the engine reports the value it resolved (a path into /server_info's `vllm_config`), which
devices it applies to, what vLLM turns `None` into on the CPU backend, the values a panel
offers and the chapter that teaches it. Validation, `server_args`, `server_env`, `label`,
the `cfg_*`/`engine_*` chart titles, the resolved-settings columns, the capstone's panel and
`EngineConfig.runs_here` are all generated from those declarations.

Adding an engine setting:
  1. Add a field to `EngineConfig` with `declare(...)`. Give `cpu_default` only where vLLM
     resolves `None` to a fixed value on CPU, with the vLLM source line in a comment, and
     check it against tests/data/server_info_cpu.json; declare no GPU default (it differs by
     GPU and entry point).
  2. Give the setting a non-default value in `NON_DEFAULT` in tests/unit/test_settings.py;
     the tests then check it reaches the command line (or the environment), that vLLM's
     parser accepts it, and that its resolved path exists in the recorded /server_info.
  3. Checks that involve other settings, the machine or the model files stay hand-written:
     `EngineConfig._check_together` (other settings), `EngineConfig.cannot_run_here` (this
     machine, cheaply), `helpers/engine/preflight.py` (machine and model files, at start).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from helpers.i18n import tr

# On a CPU machine vLLM treats `gpu_memory_utilization` as the share of host RAM given to
# weights + KV cache. Its stock 0.92 does not start on a 24 GiB machine (the engine compares
# it with the free memory of one NUMA node), so the guide starts from a modest share.
CPU_DEFAULT_MEMORY_FRACTION = 0.25
GPU_DEFAULT_MEMORY_FRACTION = 0.90

KV_CACHE_DTYPES = ("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8_per_token_head")
DTYPES = ("auto", "bfloat16", "float16", "float32")
LOG_LEVELS = ("debug", "info", "warning", "error")
# Weight quantization methods the CPU backend has kernels for (vLLM's CPU docs).
CPU_QUANTIZATION = ("awq", "gptq", "compressed-tensors")

# Executors the guide offers for more than one rank ("uni" is the harness's own merged layout).
EXECUTOR_BACKENDS = ("mp", "ray")

DEVICES = ("cpu", "cuda")
_WHAT = {int: "a whole number", float: "a number", bool: "True or False", str: "text", dict: "a dict"}


@dataclass(frozen=True)
class Setting:
    """One engine setting: how it travels, what it may be, how it is named and read back.
    `name`, `kind`, `nullable` and `default` come from the EngineConfig field that declares it."""

    fix: str  # what to try when a value is refused (the "Try:" of ConfigError)
    flag: str | None = None  # api_server flag; None: it travels as `env` instead
    env: str | None = None  # environment variable that carries it instead of a flag
    unit: str = ""  # for axis titles
    short: str = ""  # legend label; the name when empty
    what: str = ""  # what a value must be, for type errors; from `kind` when empty
    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None  # exclusive lower bound
    resolved: tuple[str, ...] | None = None  # path in /server_info's vllm_config
    devices: tuple[str, ...] = DEVICES
    # What vLLM turns None into on the CPU backend: a value, or a function of the config for
    # defaults that depend on other settings. None: no fixed value (or not nullable).
    cpu_default: Any = None
    panel: tuple = ()  # the values a panel offers (besides the config's own and vLLM's default)
    chapter: int | None = None  # the chapter that teaches it, where a panel offers it
    # From the field (filled in by `from_field`):
    name: str = ""
    kind: type = object  # int, float, bool, str or dict
    nullable: bool = True  # None allowed: "vLLM's default" (or the guide's, see EngineConfig)
    default: Any = None  # the guide's default

    @classmethod
    def from_field(cls, f: dataclasses.Field, hint) -> "Setting":
        """The field's Setting with its name, kind, None-ness and default filled in from the field."""
        kinds = tuple(k for k in (getattr(hint, "__args__", None) or (hint,)))
        kind = next(k for k in kinds if k is not type(None))
        return dataclasses.replace(f.metadata["setting"], name=f.name, kind=kind,
                                   nullable=type(None) in kinds, default=f.default)

    @property
    def label(self) -> str:
        return self.short or self.name

    @property
    def title(self) -> str:
        return f"{self.name} ({self.unit})" if self.unit else self.name

    def default_for(self, config) -> Any:
        """The value vLLM resolves None to for this config, where the table declares one."""
        if config.device != "cpu" or self.cpu_default is None:
            return None
        return self.cpu_default(config) if callable(self.cpu_default) else self.cpu_default

    def problem(self, value) -> str | None:
        """Why `value` is not acceptable on its own (None when it is); other settings aside."""
        if value is None:
            return None if self.nullable else "needs a value, got None."
        if not _is_kind(value, self.kind):
            what = self.what or (tr("True, False or None") if self.kind is bool and self.nullable else _WHAT[self.kind])
            return tr("must be {what}, got {value!r}.", what=what, value=value)
        if self.choices and value not in self.choices:
            return tr("{value!r} is not one of {choices}.", value=value, choices=self.choices)
        if _out_of_range(value, self.minimum, self.maximum, self.above):
            return tr("must be {range_text}, got {value}.",
                      range_text=_range_text(self.minimum, self.maximum, self.above), value=value)
        return None

    def flags(self, value) -> list[str]:
        """The command-line words for `value`, by vLLM's sweep rule: None → nothing,
        bool → --x / --no-x, dict → JSON, anything else → its text."""
        if self.flag is None or value is None:
            return []
        if isinstance(value, bool):
            return [self.flag if value else "--no-" + self.flag[2:]]
        return [self.flag, json.dumps(value) if isinstance(value, dict) else str(value)]

    def env_text(self, value) -> str | None:
        """The environment value for `value` (bool as 1/0, vLLM's convention); None: not set."""
        if self.env is None or value is None:
            return None
        return ("1" if value else "0") if isinstance(value, bool) else str(value)


def declare(default, fix: str, **facts) -> Any:
    """An EngineConfig field that carries its `Setting` (see the module docstring)."""
    return dataclasses.field(default=default, metadata={"setting": Setting(fix=fix, **facts)})


def _is_kind(value, kind: type) -> bool:
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, (int, float))
    return isinstance(value, kind) and not (kind is str and value == "")


def _out_of_range(v, minimum, maximum, above) -> bool:
    return ((minimum is not None and v < minimum) or (maximum is not None and v > maximum)
            or (above is not None and v <= above))


def _range_text(minimum, maximum, above) -> str:
    low = f"({above}" if above is not None else f"[{minimum}" if minimum is not None else None
    if low and maximum is not None:
        return f"in {low}, {maximum}]"
    if above is not None:
        return tr("more than {above}", above=above)
    return (
        tr("at least {minimum}", minimum=minimum) if minimum is not None else tr("at most {maximum}", maximum=maximum)
    )


# -- vLLM's CPU defaults that depend on other settings ----------------------------------------
# vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults: on CPU the OpenAI server's defaults
# are 2048 tokens and 128 sequences *per rank* (world size = tensor × pipeline parallel size).


def _ranks(config) -> int:
    """Ranks of one engine: tensor × pipeline parallel size (arg_utils.py: `world_size =
    self.pipeline_parallel_size * self.tensor_parallel_size`); data-parallel replicas each
    have their own scheduler, so they do not count."""
    return config.tensor_parallel_size * config.pipeline_parallel_size


def cpu_max_num_seqs(config) -> int:
    return 128 * _ranks(config)


def cpu_max_num_batched_tokens(config) -> int:
    """2048 per rank; with chunked prefill off at least max_model_len
    (EngineArgs._set_default_max_num_seqs_and_batched_tokens_args)."""
    budget = 2048 * _ranks(config)
    return max(budget, config.max_model_len) if config.enable_chunked_prefill is False else budget


def dig(tree: dict, path: tuple[str, ...]):
    for key in path:
        if not isinstance(tree, dict):
            return None
        tree = tree.get(key)
    return tree
