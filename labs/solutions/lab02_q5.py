# Each sample is a request of its own with the same prompt. The second sample finds the first
# one's blocks, but get_computed_blocks caps the hit at the prompt's length minus one (the last
# prompt token is always computed), and hits are whole blocks: a prompt of two blocks reuses one.
hit_per_sample = ((twice.input_len - 1) // B) * B
answer = twice.num_prompts * (twice.n - 1) * hit_per_sample
