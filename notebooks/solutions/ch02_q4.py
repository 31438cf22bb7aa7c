# Exercise 4: the too-low fraction's budget is smaller than what the worker holds before any KV
# cache (weights and working memory), so the KV share comes out negative: no room for KV.
# Free memory was never the problem: so small a request fits in any node's free memory.
# (If the engine started after all, `too_low["line"]` is None and the answer is "it started".)
# On a GPU the start-up report has no node memory: read the engine's own line instead.
if too_low["line"] is None:
    answer = "it started"
elif ref.get("node_memory_gib") is None:
    answer = "no room for KV" if "cache blocks" in too_low["line"] else "free memory on the node"
    print(f"the engine's line: {too_low['line']} → {answer}")
else:
    budget_gib = too_low["fraction"] * ref["node_memory_gib"]
    answer = "no room for KV" if budget_gib < ref["non_kv_gib"] else "free memory on the node"
    print(f"budget {budget_gib:.2f} GiB vs non-KV {ref['non_kv_gib']:.2f} GiB → {answer}")
