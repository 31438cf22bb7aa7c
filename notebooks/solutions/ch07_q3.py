# Exercise 3 (chapter 7): of the two bindings asked about, the one with more output tokens per
# second (at the full size a `nobind` row runs beside them; it is not one of the answers).
answer3 = max(["auto", "all cores"], key=lambda name: binding_rows[name]["output_throughput"])
