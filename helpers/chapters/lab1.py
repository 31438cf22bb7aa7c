"""Lab 1 · predict the KV cache: the bytes one token takes, and the answers the lab names as
known mistakes (each explained when a learner gives it)."""
from __future__ import annotations

from helpers.i18n import N_


def kv_bytes_from_shape(shape: dict, bytes_per_number: int = 2) -> int:
    """One key and one value per layer, for each KV head (not each query head), head_dim numbers
    wide. Q1 asks it in bf16 (two bytes a number) whatever this machine computes in."""
    return 2 * shape["num_hidden_layers"] * shape["num_key_value_heads"] * shape["head_dim"] * bytes_per_number


def known_wrong_bytes(shape: dict, bytes_per_number: int = 2) -> dict:
    """Wrong answers to Q1 that the check recognises, by what the learner probably did."""
    right = kv_bytes_from_shape(shape, bytes_per_number)
    query_heads = 2 * shape["num_hidden_layers"] * shape["num_attention_heads"] * shape["head_dim"] * bytes_per_number
    return {N_("you used the article's layers × heads × bytes"):
                lambda: shape["num_hidden_layers"] * shape["num_attention_heads"] * bytes_per_number,
            N_("you used query heads instead of KV heads"): lambda: query_heads,
            N_("you forgot the ×2 for key and value"): lambda: right / 2}


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ()
PANELS = ()
CHECKS = ("kv_bytes_from_shape", "known_wrong_bytes")
CLAIMS = ()
