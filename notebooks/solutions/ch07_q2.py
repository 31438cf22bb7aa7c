# Exercise 2 (chapter 7): the floor with eight in flight. Weights are read once per step; the KV
# term grows with the sequences the engine ran together (decode_batch: the mean running count) and
# their mean context. The bandwidth is the machine's roof, measured with every core in 7.1.
import helpers as H

weights = H.results.roofline.weight_bytes(folder, base.dtype)
nbytes = weights + eight["decode_batch"] * context * H.results.rows.kv_bytes_per_token(eight)
answer2 = nbytes / (roof_all["bandwidth_gbs"] * 1e9) * 1e3  # ms
