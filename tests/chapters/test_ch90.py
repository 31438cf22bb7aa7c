"""Notebook 90's home: which pooled experiments its chart compares."""
import pandas as pd

from helpers.chapters import ch90


def test_an_experiment_with_one_configuration_is_left_out():
    ratios = pd.DataFrame({"experiment": ["a", "a", "b"], "config_label": ["stock", "tuned", "stock"]})
    assert list(ch90.compared(ratios)["experiment"]) == ["a", "a"]
    assert ch90.compared(ratios.iloc[:0]).empty
