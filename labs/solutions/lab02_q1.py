# Only a block that holds shared tokens alone can match another request's. A system prompt of half a
# block fills no block on its own: the first block also holds each request's own text, so its hash
# differs from request to request, and no request finds anything in the cache, however many share
# it.
full_blocks = short.prefix_len // B  # 0
answer = (short.num_prompts - short.num_prefixes) * full_blocks * B
