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
from helpers.results import ResultStore, reuse_or_measure

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
    def ask() -> dict:
        with experiment.turn_for(config, "greedy answers"):
            server = experiment.engine_for(config, progress)
            headers = getattr(server, "headers", None)  # a remote server's key
            return {"prompts": list(prompts),
                    "answers": [_chat(server.base_url, server.model_path, p, max_tokens, headers) for p in prompts]}

    row = experiment.base_row(config, {"prompts": list(prompts), "max_tokens": max_tokens}, "", "answers")
    return reuse_or_measure(row, ask, force=force, store=store)["answers"]


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


def agreement(reference: EngineConfig, candidates: list[EngineConfig], prompts=PROMPTS,
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


# -- drift and a quality figure, token by token -------------------------------------------------
# A fixed English paragraph (written for the guide) whose likelihood each engine computes: the
# mean log-probability per token is a small quality figure that needs no labelled data. Higher
# (closer to 0) means the model finds ordinary text less surprising.
REFERENCE_TEXT = (
    "The library opens at nine in the morning and closes at six in the evening. On weekdays the "
    "reading room is quiet, and most visitors come to study, borrow books or use the computers. "
    "On Saturdays there is a story hour for children, and the staff help parents find books for "
    "young readers. Anyone who lives in the town can ask for a library card at the front desk.")

DRIFT_PROMPTS = (
    "Explain how a bicycle works, step by step.",
    "Tell a short story about a lighthouse keeper.",
    "Describe the water cycle to a ten-year-old.",
    "List some tips for learning a new language.",
)


def _post(base_url: str, path: str, body: dict, headers: dict | None) -> dict:
    req = urllib.request.Request(base_url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def text_logprob(config: EngineConfig, text: str = REFERENCE_TEXT, force: bool = False,
                 store: ResultStore | None = None, progress: bool = True) -> dict:
    """Mean log-probability per token the engine gives `text` (vLLM's `prompt_logprobs`), and
    the matching perplexity. Stored like every other measurement."""
    import math

    def score() -> dict:
        with experiment.turn_for(config, "a perplexity reading"):
            server = experiment.engine_for(config, progress)
            reply = _post(server.base_url, "/v1/completions", {"model": server.model_path, "prompt": text,
                                                                "max_tokens": 1, "temperature": 0,
                                                                "prompt_logprobs": 1},
                          getattr(server, "headers", None))
        values = prompt_token_logprobs(reply["choices"][0]["prompt_logprobs"])
        mean = sum(values) / len(values)
        return {"tokens_scored": len(values), "mean_logprob": mean, "perplexity": math.exp(-mean)}

    row = experiment.base_row(config, {"text": text}, "", "text_logprob")
    return reuse_or_measure(row, score, force=force, store=store)


def prompt_token_logprobs(entries: list) -> list[float]:
    """The log-probability of each actual prompt token (the first has none). Each entry maps
    token ids to {logprob, rank}; it holds the top-1 token and, when that is another, the actual
    one, which then has the larger rank."""
    out = []
    for entry in entries:
        if not entry:
            continue
        actual = max(entry.values(), key=lambda e: e.get("rank") or 0)
        out.append(float(actual["logprob"]))
    return out


def greedy_trace(config: EngineConfig, prompts=DRIFT_PROMPTS, max_tokens: int = 128, force: bool = False,
                 store: ResultStore | None = None, progress: bool = True) -> dict:
    """Long greedy chat answers, token by token with each token's log-probability; the answer
    runs to `max_tokens` (end-of-text ignored) so every engine writes the same length."""
    def trace() -> dict:
        with experiment.turn_for(config, "greedy traces"):
            return {"traces": _traces(experiment.engine_for(config, progress), prompts, max_tokens)}

    row = experiment.base_row(config, {"prompts": list(prompts), "max_tokens": max_tokens}, "", "trace")
    return reuse_or_measure(row, trace, force=force, store=store)


def _traces(server, prompts, max_tokens: int) -> list[dict]:
    traces = []
    for p in prompts:
        body = {"model": server.model_path, "messages": [{"role": "user", "content": p}], "temperature": 0,
                "max_tokens": max_tokens, "seed": 0, "ignore_eos": True, "logprobs": True}
        reply = _post(server.base_url, "/v1/chat/completions", body, getattr(server, "headers", None))
        content = reply["choices"][0]["logprobs"]["content"]
        traces.append({"prompt": p, "tokens": [c["token"] for c in content],
                       "logprobs": [float(c["logprob"]) for c in content]})
    return traces


def drift(reference: dict, candidate: dict) -> pd.DataFrame:
    """Per prompt: where the candidate's greedy tokens first differ from the reference's, the
    share matched before that, and how far apart the two engines' log-probabilities of the
    same tokens were while they still agreed (a numeric perturbation that precedes a flip)."""
    rows = []
    for ref, cand in zip(reference["traces"], candidate["traces"]):
        a, b = ref["tokens"], cand["tokens"]
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
        same = len(a) if first is None else first
        gaps = [abs(x - y) for x, y in zip(ref["logprobs"][:same], cand["logprobs"][:same])]
        rows.append({"config_label": candidate["config_label"], "prompt": ref["prompt"], "tokens": len(a),
                     "first_divergence": first, "token_agreement": same / max(len(a), 1),
                     "mean_logprob_gap": sum(gaps) / len(gaps) if gaps else None,
                     "mean_logprob": sum(cand["logprobs"]) / max(len(cand["logprobs"]), 1),
                     "reference_mean_logprob": sum(ref["logprobs"]) / max(len(ref["logprobs"]), 1)})
    return pd.DataFrame(rows)
