"""The run functions of the chapters' control panels whose choices are more than settings.

A panel whose controls are all EngineConfig fields needs none of this (`widgets.measuring`).
These turn a chapter's own choices (a load's shape, "eager or compiled", a pair of weights and
a KV dtype) into a config and a load, then measure. Each factory takes what the chapter already
built and returns `run(**choices, force=False, progress=True) -> row`, the signature
`widgets.Panel` calls; the notebook calls it once with the defaults in a plain cell.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from helpers import correctness, experiment
from helpers.config import EngineConfig
from helpers.load import Load


def chunked_prefill(base: EngineConfig, mixed: Load, tag: str = "ch3-panel") -> Callable[..., dict]:
    """Chapter 3: chunked prefill, budget, prefill cap and seats, on the mixed load or on long
    prompts only. With chunking off the budget is raised to max_model_len, which vLLM needs to
    schedule a whole prompt (None: vLLM's default, which it raises itself)."""
    def run(chunked=True, budget=None, cap=None, max_seqs=None, short_requests=8, shape="mixed",
            force=False, progress=True) -> dict:
        if not chunked and budget is not None:
            budget = max(budget, base.max_model_len)
        cfg = base.replace(enable_chunked_prefill=chunked, max_num_seqs=max_seqs, max_num_batched_tokens=budget,
                           long_prefill_token_threshold=cap)
        load = dataclasses.replace(mixed, num_prompts=short_requests) if shape == "mixed" else \
            Load(num_prompts=short_requests, input_len=mixed.long_input_len, output_len=mixed.output_len,
                 max_concurrency=short_requests)
        return experiment.measure(cfg, load, force=force, progress=progress, tag=tag)
    return run


def prefix_caching(base: EngineConfig, fixed: Load, block: int, tag: str = "ch4-panel") -> Callable[..., dict]:
    """Chapter 4: caching on or off, on the fixed-prefix load with another prefix length (in
    blocks), number of distinct prefixes or number of requests."""
    def run(caching=True, prefix_blocks=4.0, prefixes=1, requests=fixed.num_prompts, force=False,
            progress=True) -> dict:
        load = dataclasses.replace(fixed, num_prompts=requests, prefix_len=max(1, int(prefix_blocks * block)),
                                   num_prefixes=min(prefixes, requests))
        return experiment.measure(base.replace(enable_prefix_caching=caching), load, force=force,
                                  progress=progress, tag=tag)
    return run


def eager_or_compiled(base: EngineConfig, compiled: EngineConfig, loads: dict[int, Load],
                      tag: str = "ch4-compile") -> Callable[..., dict]:
    """Chapter 4: the eager or the compiled engine (optionally with a CUDA-graph mode) at a
    number of requests in flight (`loads` maps it to the load)."""
    def run(engine="compiled", concurrency=4, cudagraph_mode=None, force=False, progress=True) -> dict:
        cfg = base if engine == "eager" else compiled.replace(
            compilation_config={"cudagraph_mode": cudagraph_mode} if cudagraph_mode else None)
        return experiment.measure(cfg, loads[concurrency], force=force, progress=progress, tag=tag)
    return run


def kv_dtype_and_weights(base: EngineConfig, weight_models: dict[str, str], reference_trace: dict,
                         drift_tokens: int, tag: str = "ch5-panel") -> Callable[..., dict]:
    """Chapter 5: one engine per (KV dtype, weights): its KV capacity, then its long greedy
    answers against the reference's (the share of tokens matched before the first difference)."""
    def run(kv_cache_dtype="auto", weights="bf16", force=False, progress=True) -> dict:
        cfg = base.replace(kv_cache_dtype=kv_cache_dtype, model=weight_models[weights])
        row = experiment.capacity(cfg, force=force, progress=progress, tag=tag)
        d = correctness.drift(reference_trace, correctness.greedy_trace(cfg, max_tokens=drift_tokens, force=force))
        return {**row, "config_label": f"{weights} weights, kv={kv_cache_dtype}",
                "token_agreement": d.token_agreement.mean()}
    return run
