# Exercise 1: how many short requests run at once on the fixed cache (default max_model_len)?
# V1 allocates blocks as tokens arrive, so count blocks per request, not max_model_len.
usable_blocks = plan["override"] - 1  # vLLM keeps one block back (the null block)
blocks_per_request = -(-(plan["input_len"] + plan["output_len"]) // block)  # whole blocks
answer_running = usable_blocks // blocks_per_request
print(f"{usable_blocks} usable blocks // {blocks_per_request} blocks per request = {answer_running} at once")
