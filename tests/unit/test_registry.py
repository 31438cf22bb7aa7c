"""Course furniture from data: the contents table and start times from stored rows."""
from helpers import registry


def test_contents_lists_every_chapter_in_order():
    table = registry.contents()
    assert table.index("01_why") < table.index("02_") < table.index("03_") < table.index("lab01")


def test_start_note_counts_each_engine_start_once():
    rows = [{"start_seconds": 40.0, "cfg_enforce_eager": True}, {"start_seconds": 40.0, "cfg_enforce_eager": True},
            {"start_seconds": 60.0, "cfg_enforce_eager": True}, {"start_seconds": 100.0, "cfg_enforce_eager": False}]
    assert registry.start_seconds(True, rows) == [40.0, 60.0]
    assert "2 eager engine start(s)" in registry.start_note(True, rows) and "50 s" in registry.start_note(True, rows)
    assert "No compiled engine" in registry.start_note(False, rows[:1])
