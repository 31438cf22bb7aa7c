# Exercise 2 (chapter 4): what share of the prompt tokens does a fixed prefix save?
# The first request finds nothing and computes (and caches) everything. Every later request
# finds the prefix's *full* blocks; a partial last block and the request's own part are computed.
cached_per_request = (fixed.prefix_len // block) * block
hits = (fixed.num_prompts - 1) * cached_per_request
all_prompt_tokens = fixed.num_prompts * (fixed.prefix_len + fixed.input_len)
answer = hits / all_prompt_tokens
