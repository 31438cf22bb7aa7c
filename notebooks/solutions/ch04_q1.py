# Exercise 1 (chapter 4): how many sequences run at once, at the peak, with n=4?
# Each request of the n=4 load becomes four sequences (vLLM V1's ParentRequest), and the load
# sends all its requests at once. Nothing here is small enough to hold them back: max_num_seqs
# (printed by chapter 3) and the KV cache both have room for far more. So the peak is:
answer = 4 * sample_loads["n=1"].num_prompts
