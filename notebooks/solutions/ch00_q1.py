# Output throughput: every output token of the run, divided by the run's wall time.
throughput = first["total_output_tokens"] / first["duration"]
