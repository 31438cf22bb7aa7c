"""Lab 2 (prefix caching): the lab's hit rule for a prompt design, and its closing table and
notes beside the engine's counters. No engine starts here."""
from __future__ import annotations

import pandas as pd

from helpers.i18n import tr
from helpers.load import Load


def rule(load: Load, block: int) -> tuple[int, int]:
    """(hits, queries) in tokens, by this lab's rule, from the design alone: only whole blocks of
    a prompt start that an earlier request computed are found; every prompt token is looked up."""
    if load.kind == "prefix":
        hits = (load.num_prompts - load.num_prefixes) * (load.prefix_len // block) * block
        return hits, load.num_prompts * (load.prefix_len + load.input_len)
    hits = load.num_prompts * (load.n - 1) * ((load.input_len - 1) // block) * block
    return hits, load.num_prompts * load.n * load.input_len


def summary(designs: dict[str, Load], rows: dict[str, dict], block: int) -> pd.DataFrame:
    """One line per design: the rule's hits, queries and hit rate beside the measured ones."""
    out = {}
    for name, load in designs.items():
        hits, queries = rule(load, block)
        out[name] = {"design": load.label(), "rule hits": hits, "measured hits": rows[name]["prefix_cache_hits"],
                     "rule queries": queries, "measured queries": rows[name]["prefix_cache_queries"],
                     "rule hit rate": hits / queries, "measured hit rate": rows[name]["prefix_cache_hit_rate"],
                     "median TTFT (ms)": rows[name]["median_ttft_ms"]}
    return pd.DataFrame(out).T


def notes(table: pd.DataFrame, block: int, requests: int) -> list[str]:
    """Where the rule and the engine agreed, and why they differ where they do (tokenization at the seam)."""
    exact = [n for n, r in table.iterrows() if r["rule hits"] == r["measured hits"]]
    lines = [tr("- The rule gave the measured hits exactly for {n_exact} of {n_table} designs (block size {block}, "
                "{requests} requests each).", n_exact=len(exact), n_table=len(table), block=block, requests=requests)]
    for name, r in table.iterrows():
        if r["rule queries"] != r["measured queries"]:
            lines.append(tr("- {name}: the engine looked up {measured_queries:,.0f} prompt tokens where the design "
                            "has {rule_queries:,.0f}. The benchmark sends text, and the server's tokenizer split a "
                            "few prompts differently where the prefix meets the request's own part (a word running "
                            "across the seam).", name=name, measured_queries=r['measured queries'],
                            rule_queries=r['rule queries']))
        if r["rule hits"] != r["measured hits"]:
            lines.append(tr("- {name}: {measured_hits:,.0f} hits where the rule says {rule_hits:,.0f}, "
                            "{rule_hits_2:g} block(s) fewer: in that many prompts the tokens at the seam came out "
                            "different, so the block holding the prefix's last tokens no longer matched.", name=name,
                            measured_hits=r['measured hits'], rule_hits=r['rule hits'],
                            rule_hits_2=(r['rule hits'] - r['measured hits']) / block))
    return lines


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ()
PANELS = ()
CHECKS = ("rule", "summary", "notes")
CLAIMS = ()
