# Exercise 2: doubling max_model_len on the same blocks.
# Admission counts a request's prompt blocks, as exercise 1 did, and its answer's blocks come as it
# writes; nothing in that count depends on max_model_len (blocks are handed out as tokens arrive,
# not reserved for the longest sequence). The count at either length is therefore the same
# expression, with no max_model_len in it: the same number run at once. The reported "maximum
# concurrency" halves, but it counts full-length sequences, which this load never has.
prompt_blocks = -(-plan["input_len"] // block)
admitted = (plan["override"] - 1) // prompt_blocks  # at either max_model_len
answer_doubled = "the same"
print(f"{admitted} admitted at either length: {answer_doubled}")
