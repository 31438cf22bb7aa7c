"""Plain completion requests, one after another, for what the benchmark client cannot send.

vLLM serves beam search from its front end and does not stream it ("Streaming is not
currently supported with beam search", vllm/entrypoints/openai/completion/serving.py), while
the benchmark client always streams. So beam search and its greedy baseline are timed here:
the same prompts, one request at a time, wall time per request.
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request


def timed_completions(base_url: str, model: str, prompts: list[str], max_tokens: int, params: dict,
                      headers: dict | None = None) -> dict:
    """Send each prompt once with `params` (e.g. {"temperature": 0} or
    {"use_beam_search": True, "n": 4}); returns wall seconds, completion tokens and the texts."""
    seconds, tokens, texts = [], 0, []
    for prompt in prompts:
        body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True, **params}
        req = urllib.request.Request(base_url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **(headers or {})})
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                reply = json.loads(r.read())
        except urllib.error.HTTPError as e:  # the server's own reason, e.g. a parameter it refuses
            raise RuntimeError(f"the server refused {params}: {e.read().decode(errors='replace')[:500]}") from e
        seconds.append(time.monotonic() - t0)
        tokens += reply["usage"]["completion_tokens"]
        texts.append([c["text"] for c in reply["choices"]])
    return {"seconds": seconds, "mean_seconds": sum(seconds) / len(seconds), "completion_tokens": tokens,
            "texts": texts}


def cached_tokens_each(base_url: str, model: str, prompts: dict[str, list[int]], scrape,
                       headers: dict | None = None, settle_s: float = 5.0) -> dict[str, int]:
    """Send each prompt (token ids) once, in order, for one output token, and read how many of
    its tokens the engine found in its prefix cache: the growth of `vllm:prefix_cache_hits`
    across that request. `scrape()` returns /metrics as a dict; the counter is updated after the
    engine's step, so it is polled until the request's lookup shows in `prefix_cache_queries`."""
    found = {}
    for name, ids in prompts.items():
        before = scrape()
        body = {"model": model, "prompt": ids, "max_tokens": 1, "temperature": 0}
        req = urllib.request.Request(base_url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **(headers or {})})
        with urllib.request.urlopen(req, timeout=600) as r:
            r.read()
        deadline = time.monotonic() + settle_s
        after = scrape()
        while (after["prefix_cache_queries"] < before["prefix_cache_queries"] + len(ids) - 1
               and time.monotonic() < deadline):
            time.sleep(0.1)
            after = scrape()
        found[name] = int(after["prefix_cache_hits"] - before["prefix_cache_hits"])
    return found
