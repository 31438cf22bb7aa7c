# Exercise 1: how many short requests run at once on the fixed cache (default max_model_len)?
# V1 hands out blocks as tokens arrive, so count blocks per request, not max_model_len. The
# scheduler admits a waiting request when the blocks for its whole prompt are free
# (scheduler_reserve_full_isl, on by default in vLLM 0.32: KVCacheManager.allocate_slots checks the
# prompt's length, not the answer's); its answer gets blocks later, as it is produced. So the
# prompt's blocks decide how many are admitted. With this plan the answer spills into one more
# block or more at either block size; admission does not count it, so it can preempt a running
# request later but does not stop its admission.
usable_blocks = plan["override"] - 1  # vLLM keeps one block back (the null block)
prompt_blocks = -(-plan["input_len"] // block)  # whole blocks
answer_blocks = -(-(plan["input_len"] + plan["output_len"]) // block) - prompt_blocks
answer_running = usable_blocks // prompt_blocks
print(
    f"{usable_blocks} usable blocks // {prompt_blocks} blocks per prompt = {answer_running} "
    f"admitted at once (each answer needs {answer_blocks} more block(s) as it grows)"
)
