# Q1: every weight once per step, as the engine holds it. The files are bf16 (2 bytes a number); in
# float32 (the guide's dtype where bf16 is emulated) each takes 4. The tied lm_head is the embedding
# table already in the files: counted once.
bytes_per_number = 4 if base.dtype == "float32" else 2
weights_mb = sum(files.values()) * bytes_per_number / 2 / 1e6
