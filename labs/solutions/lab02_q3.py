# Each template's first request misses; every other request finds its template's full blocks.
# Queries count every prompt token of every request, its own part included.
hits = (two.num_prompts - two.num_prefixes) * (two.prefix_len // B) * B
queries = two.num_prompts * (two.prefix_len + two.input_len)
answer = hits / queries
