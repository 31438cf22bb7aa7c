# Q3: the same weights, and the KV of the sequences the engine ran per step on average.
import helpers as H

context = loads[8].input_len + loads[8].output_len / 2
weights = lab5.weights_mb(folder, base.dtype) * 1e6  # the weights every step reads (Q1)
nbytes = weights + rows[8]["decode_batch"] * context * H.results.rows.kv_bytes_per_token(rows[8])
floor_eight = nbytes / (roof["bandwidth_gbs"] * 1e9) * 1e3  # ms
