# Only full blocks are hashed and shared. A system prompt of half a block fills no block, so no
# request finds anything in the cache, however many share it.
full_blocks = short.prefix_len // B  # 0
answer = (short.num_prompts - short.num_prefixes) * full_blocks * B
