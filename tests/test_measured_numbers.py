"""tools/measured_numbers.py: the test counts of docs/measured-numbers.md come from pytest's own
collection, written with the date, the commit and the load (issue 54: counts typed by hand went stale)."""

from pathlib import Path

import pytest
from conftest import script

ROOT = Path(__file__).resolve().parents[1]
M = script("tools/measured_numbers.py")


def test_the_counts_are_read_from_pytests_closing_line():
    assert M.parse_counts("tests/a.py::t\n\n489/576 tests collected (87 deselected) in 3.21s\n") == (489, 576)
    assert M.parse_counts("1 test collected in 0.1s") == (1, 1)
    with pytest.raises(SystemExit, match="collection failed"):
        M.parse_counts("ERROR tests/a.py\n3/4 tests collected, 1 error in 0.5s")


def test_the_block_is_replaced_in_place_and_read_back():
    first = M.block(489, 576, "2026-12-02 16:00 UTC", "abc1234", (1.0, 2.0, 3.0))
    page = M.update("# Measured numbers\n\ntext\n", first)
    assert page.count(M.BEGIN) == 1 and "## Tests" in page and M.counts_in(page) == (489, 576)
    assert "load average (1, 5, 15 min) 1.00, 2.00, 3.00" in page and "abc1234" in page
    again = M.update(page + "after\n", M.block(490, 1_577, "2026-12-03 10:00 UTC", "def5678", (0.5, 0.5, 0.5)))
    assert again.count(M.BEGIN) == 1 and M.counts_in(again) == (490, 1577) and again.endswith("after\n")


def test_the_committed_page_has_the_generated_counts():
    """The README's pointer (docs/measured-numbers.md#tests) lands on counts the script wrote."""
    page = (ROOT / "docs" / "measured-numbers.md").read_text()
    assert "## Tests" in page and M.counts_in(page) is not None
