# Exercise 2 (chapter 5): KV tokens the quantized engine (`small`) gained per MiB of memory its
# weights saved. Both engines had the same budget (fraction × memory), and KV = budget − non-KV
# memory, so what the smaller weights saved went to
# the cache. Divide the tokens gained by the MiB saved.
bf, q = weights.loc["bf16"], weights.loc[small]
# A CPU's log reports the non-KV memory; a GPU's the weights' ("Model loading took"): use the one
# there is (a missing figure reads as None or NaN, and NaN is not equal to itself)
cpu = bf["non_kv_gib"] is not None and bf["non_kv_gib"] == bf["non_kv_gib"]
key = "non_kv_gib" if cpu else "weights_gib"
saved_mib = (bf[key] - q[key]) * 1024
gained_tokens = q["kv_cache_tokens"] - bf["kv_cache_tokens"]
answer = gained_tokens / saved_mib
# Compare with what one MiB holds: 2**20 / bytes per KV token (chapter 2's formula). If the two
# agree, every MiB the weights gave up went to the KV cache.
