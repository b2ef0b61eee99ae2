"""docs/packs.md's planned packs are planning's: the generated block equals what the planner gives now."""

from __future__ import annotations

from conftest import ROOT, script


def test_the_packs_docs_numbers_are_what_planning_gives():
    module = script("benchmarks/planned_packs.py")
    text = (ROOT / "docs" / "packs.md").read_text()
    block = module.current(text)
    assert block == module.generated(), "docs/packs.md is stale: run PYTHONPATH=workflow python benchmarks/planned_packs.py"
    assert "445 training jobs" in block and "| ResNet-9 | 16 | 44 | 64 (15)" in block
    assert "packs of 41" not in text and "486" not in text
