# Exercise 2 (chapter 7): the floor with eight in flight. Weights are read once per step; the KV
# term grows with the sequences the engine ran together (mean_running) and their mean context.
import helpers as H

weights = H.results.roofline.weight_bytes(folder, base.dtype)
nbytes = weights + eight["mean_running"] * context * H.results.rows.kv_bytes_per_token(eight)
answer2 = nbytes / (eight["roof_bandwidth_gbs"] * 1e9) * 1e3  # ms
