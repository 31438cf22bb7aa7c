"""Does a setting change the answers? Greedy outputs on a fixed prompt set, compared
token by token with a reference configuration.

Speed settings are supposed to be invisible in the output. Some are not (fp8 KV rounds
the cache; on CPU, eager bf16 and compiled bf16 round differently), and with greedy
decoding one flipped token changes everything after it. This module makes that visible.
"""
from __future__ import annotations

import json
import urllib.request

import pandas as pd

from helpers import experiment
from helpers.config import EngineConfig
from helpers.results import ResultStore

PROMPTS = (
    "What is the capital of France?",
    "Name three primary colours.",
    "What is 12 times 12?",
    "Write one sentence about the sea.",
    "What does a CPU do?",
)


def greedy_answers(config: EngineConfig, prompts=PROMPTS, max_tokens: int = 32, force: bool = False,
                   store: ResultStore | None = None, progress: bool = True) -> list[str]:
    """The engine's greedy chat answers (stored, like every other measurement)."""
    store = store or ResultStore()
    row = experiment.base_row(config, {"prompts": list(prompts), "max_tokens": max_tokens}, "", "answers")
    if not force and (old := store.get(row["key"])):
        return old["answers"]
    server = experiment.engine_for(config, progress)
    headers = getattr(server, "headers", None)  # a remote server's key
    answers = [_chat(server.base_url, server.model_path, p, max_tokens, headers) for p in prompts]
    store.append({**row, "prompts": list(prompts), "answers": answers})
    return answers


def _chat(base_url: str, model: str, prompt: str, max_tokens: int, headers: dict | None = None) -> str:
    body = {"model": model, "messages": [{"role": "user", "content": prompt}],
            "temperature": 0, "max_tokens": max_tokens, "seed": 0}
    req = urllib.request.Request(base_url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())["choices"][0]["message"]["content"]


def token_agreement(tokenizer, reference: str, answer: str) -> tuple[float, int | None]:
    """(share of reference tokens matched before the first divergence, index of divergence)."""
    a, b = tokenizer.encode(reference), tokenizer.encode(answer)
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if first is None and len(a) != len(b):
        first = min(len(a), len(b))
    matched = len(a) if first is None else first
    return (matched / max(len(a), 1)), first


def compare(reference: EngineConfig, candidates: list[EngineConfig], prompts=PROMPTS,
            max_tokens: int = 32, force: bool = False) -> pd.DataFrame:
    """One row per (candidate, prompt): both answers, agreement, first divergence."""
    from transformers import AutoTokenizer
    from helpers import models

    ref_answers = greedy_answers(reference, prompts, max_tokens, force)
    tok = AutoTokenizer.from_pretrained(models.resolve(reference.model))
    rows = []
    for cfg in candidates:
        answers = greedy_answers(cfg, prompts, max_tokens, force)
        for p, r, a in zip(prompts, ref_answers, answers):
            agree, first = token_agreement(tok, r, a)
            rows.append({"config_label": cfg.label(), "prompt": p, "reference": r, "answer": a,
                         "token_agreement": agree, "first_divergence": first, "identical": r == a})
    return pd.DataFrame(rows)
