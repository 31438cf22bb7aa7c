"""Lab 5 · predict the floor: the weights a decode step reads, and the answers the lab names as
known mistakes. The floors themselves are each row's (`helpers.results.roofline`), and the
crossover batch and "near the floor" are chapter 7's (`helpers.chapters.ch7`)."""
from __future__ import annotations

from pathlib import Path

from helpers.i18n import N_
from helpers.results import roofline


def weights_mb(folder: Path, dtype: str) -> float:
    """Megabytes of weights one step reads: every weight once, in the dtype the engine computes in,
    a tied output layer once (it is the embedding table)."""
    return roofline.weight_bytes(folder, dtype) / 1e6


def known_wrong_weights(folder: Path, dtype: str, shape: dict) -> dict:
    """Wrong answers to Q1 that the check recognises, by what the learner probably did."""
    right = weights_mb(folder, dtype)
    files = roofline.checkpoint_files(folder)
    return {N_("you counted the files' bf16 bytes while the engine holds float32"): lambda: sum(files.values()) / 1e6,
            N_("you counted the tied output layer twice"):
                lambda: right + shape["vocab_size"] * shape["hidden_size"] * roofline.compute_bytes(dtype) / 1e6}


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ()
PANELS = ()
CHECKS = ("weights_mb", "known_wrong_weights")
CLAIMS = ()
