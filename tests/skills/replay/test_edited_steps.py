"""The file `Execute? [y/n/edit]` opens: written, read back, and what a change means."""

from __future__ import annotations

from sherpa_skills.skills.replay.edited import classify, editor_text, read_steps

HEREDOC = "cat > notes.txt <<'EOF'\n  indented line\n# not a comment inside\nEOF"


def test_steps_come_back_as_they_were_shown_multi_line_ones_included() -> None:
    shown = ["mkdir -p build", HEREDOC, "tar -czf build/n.tar.gz notes"]
    assert read_steps(editor_text(shown)) == shown


def test_comments_and_blank_lines_are_ignored_and_an_emptied_file_has_no_steps() -> None:
    assert read_steps("# header\n\nmake\n   \n# more\nmake test\n") == ["make", "make test"]
    assert read_steps(editor_text([]).replace("make", "")) == []


def test_a_value_changed_where_a_parameter_was_is_a_parameter() -> None:
    templates = ["mkdir -p build", "tar -czf build/{{ name }}.tar.gz notes", "tar -tzf build/{{ name }}.tar.gz"]
    rendered = ["mkdir -p build", "tar -czf build/n.tar.gz notes", "tar -tzf build/n.tar.gz"]
    same = list(rendered)
    assert classify(same, rendered, templates) == ("same", None)
    both = ["mkdir -p build", "tar -czf build/w.tar.gz notes", "tar -tzf build/w.tar.gz"]
    assert classify(both, rendered, templates) == ("params", {"name": "w"})


def test_any_other_change_rewrites_the_steps() -> None:
    templates = ["tar -czf build/{{ name }}.tar.gz notes", "tar -tzf build/{{ name }}.tar.gz"]
    rendered = ["tar -czf build/n.tar.gz notes", "tar -tzf build/n.tar.gz"]
    for edited in (
        ["tar -czf build/a.tar.gz notes", "tar -tzf build/b.tar.gz"],  # one parameter, two values
        ["tar -cjf build/n.tar.gz notes", "tar -tzf build/n.tar.gz"],  # a literal part changed
        ["tar -czf build/n.tar.gz notes"],  # a step removed
        [*rendered, "ls build"],  # a step added
    ):
        assert classify(edited, rendered, templates) == ("steps", edited)
