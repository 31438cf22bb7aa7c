# Exercise 3 (chapter 7): the binding with more output tokens per second, from the two rows.
answer3 = max(binding_rows, key=lambda name: binding_rows[name]["output_throughput"])
