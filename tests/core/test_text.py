"""tinylab/core/text.py: sentences wrapped for an 80-column terminal, never inside a word, a flag or a path."""

from __future__ import annotations

from tinylab.core.text import wrap_items, wrap_words


def test_lines_fit_and_keep_flags_and_paths_whole():
    text = "add --nproc-per-node 2 and read /very/long/path/to/the-run-folder/profiles/rocprofv3/rank1 afterwards"
    lines = wrap_words(text, 30, first="  ", rest="    ")
    assert " ".join(line.strip() for line in lines) == text
    assert "--nproc-per-node" in " ".join(lines).split()
    assert any(line.strip() == "/very/long/path/to/the-run-folder/profiles/rocprofv3/rank1" for line in lines)
    assert all(len(line) <= 30 for line in lines if "/very/" not in line)
    assert lines[0].startswith("  ") and not lines[0].startswith("   ")
    assert all(line.startswith("    ") for line in lines[1:])


def test_empty_text_is_one_line_of_the_first_indent():
    assert wrap_words("", 20, first="- ") == ["-"]


def test_items_break_only_between_them():
    """`show` broke `label=exercise performance-debugging step 1` over two lines at its spaces."""
    items = ["batch_size=2", "label=exercise performance-debugging step 1", "seed=42", "x" * 40]
    lines = wrap_items(items, 40, "config   ", " " * 9)
    assert lines == ["config   batch_size=2",
                     "         label=exercise performance-debugging step 1",  # wider than 40: its own line
                     "         seed=42",
                     "         " + "x" * 40]
    assert wrap_items(["a=1", "b=2"], 80, "- ") == ["- a=1  b=2"] and wrap_items([], 10, "k ") == ["k"]
