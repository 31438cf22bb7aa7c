# Exercise 2: doubling max_model_len on the same blocks.
# A short request needs the same blocks at either length (blocks are handed out as its tokens
# arrive, not reserved for max_model_len), so the same number fit: the reported "maximum
# concurrency" halves, but it counts full-length sequences, which this load never has.
blocks_per_request = -(-(plan["input_len"] + plan["output_len"]) // block)
at_short = (plan["override"] - 1) // blocks_per_request
at_long = (plan["override"] - 1) // blocks_per_request  # the same blocks, the same requests
answer_doubled = (
    "the same" if at_long == at_short else ("about half" if 2 * at_long <= at_short else "fewer")
)
print(answer_doubled)
