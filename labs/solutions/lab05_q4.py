# Q4: memory time (W + B·kv) / BW = compute time B·f / F  →  B = (W / BW) / (f / F - kv / BW).
import json
from pathlib import Path

cfg = json.loads((Path(folder) / "config.json").read_text())  # H.models.resolve gives a str
h, inter, layers, heads = (
    cfg["hidden_size"],
    cfg["intermediate_size"],
    cfg["num_hidden_layers"],
    cfg["num_attention_heads"],
)
kv_dim = cfg["num_key_value_heads"] * shape["head_dim"]
q_dim = heads * shape["head_dim"]
# q, o, k, v, MLP; lm_head
params = layers * (2 * h * q_dim + 2 * h * kv_dim + 3 * h * inter) + cfg["vocab_size"] * h
# attention: q·k and p·v over the context
flops = 2 * params + 4 * context * layers * heads * shape["head_dim"]
bw, peak = roof["bandwidth_gbs"] * 1e9, roof["compute_gflops"] * 1e9
per_sequence = flops / peak - context * kv_token / bw
weights = lab5.weights_mb(folder, base.dtype) * 1e6  # the weights every step reads (Q1)
crossover = (weights / bw) / per_sequence if per_sequence > 0 else float("inf")
