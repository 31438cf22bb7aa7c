# Reasoning first: with only short prompts, no prefill is longer than a small budget, so a step at budget 256
# holds the same work as at the default budget. Expect "within noise here". Then measure and judge:
short_rows = {name: H.measure(configs[name], short_only, tag="ch1-exercise") for name in ("stock", "tuned")}
verdict = H.verdicts.judge_change("tuned is better", short_rows["stock"], short_rows["tuned"], "p99_itl_ms",
                              better="lower", held_at=1.3).verdict
