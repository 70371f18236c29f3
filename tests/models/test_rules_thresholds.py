"""The rules' named thresholds (models/rules_thresholds.py): each one is read by the rules, and every
threshold the rules read is named there, so a bar that is documented is a bar that decides."""

from __future__ import annotations

import ast
import inspect

import models.rules_margins as rules_margins
from models.rules_thresholds import THRESHOLDS


def _read_by_the_rules() -> set[str]:
    """The string keys the rules look up in their threshold mapping (`th["name"]`)."""
    tree = ast.parse(inspect.getsource(rules_margins))
    return {
        node.slice.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "th"
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    }


def test_every_named_threshold_is_read_and_every_read_one_is_named() -> None:
    read = _read_by_the_rules()
    assert read - set(THRESHOLDS) == set(), "read by the rules but not named"
    assert set(THRESHOLDS) - read == set(), "named but never read by the rules"


def test_thresholds_are_floats_in_their_units_range() -> None:
    """Ratios, rates and times are positive; the closed-loop scores (pipeline.littles) lie in [-1, 1]."""
    scores = {"closed_loop", "paced_loop"}
    for name, value in THRESHOLDS.items():
        assert isinstance(value, float), name
        assert -1.0 <= value <= 1.0 if name in scores else 0.0 < value < 1e6, name
