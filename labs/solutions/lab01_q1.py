# Bytes per KV token: one key and one value (x2) per layer, per KV head, head_dim numbers each.
import helpers as H

s = H.models.shape(H.models.resolve(MODEL))
# bf16: 2 bytes
bytes_per_token = 2 * s["num_hidden_layers"] * s["num_key_value_heads"] * s["head_dim"] * 2
