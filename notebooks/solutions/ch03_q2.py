# Exercise 2 (chapter 3): how many of the flood does the scheduler admit at once in the shrunken
# cache? A request is admitted when its whole prompt's blocks can be allocated; it gets later blocks
# as it writes. So the count is the usable blocks divided by the blocks one prompt needs (at most
# the number of requests sent). The block the pool keeps back does not count.
import math

blocks_per_prompt = math.ceil(flood.input_len / block)
answer = min(flood.num_prompts, usable_blocks // blocks_per_prompt)
print(
    f"{usable_blocks} usable blocks // {blocks_per_prompt} block(s) per prompt → {answer} requests"
)
