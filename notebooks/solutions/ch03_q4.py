# Exercise 4 (chapter 3): the client concurrency with the highest output throughput in 3.1.
answer = sweep.loc[sweep.output_throughput.idxmax(), "load_max_concurrency"]
print(answer)
