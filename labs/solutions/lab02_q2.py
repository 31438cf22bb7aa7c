# The first request finds an empty cache and computes everything. Each later request finds all of
# the shared prompt's full blocks (here the whole prefix: it is a whole number of blocks) and
# computes only its own part.
later_requests = whole.num_prompts - 1
answer = later_requests * (whole.prefix_len // B) * B
