"""The YAML loader: YAML 1.2 scalars, string keys, lines for every value, and bounded against hostile files."""

from __future__ import annotations

from pathlib import Path

import pytest

from sherpa_skills.errors import WorkflowError
from sherpa_skills.yaml_source import MAX_DEPTH, load_yaml_file, load_yaml_text


def refused(text: str) -> str:
    with pytest.raises(WorkflowError) as info:
        load_yaml_text(text, "f.yaml")
    return str(info.value)


class TestScalars:
    def test_on_off_yes_no_are_strings_as_keys_and_values(self) -> None:
        """YAML 1.2: only true/false are booleans, so a trigger named `on` is the string 'on'."""
        data = load_yaml_text("on: yes\noff: no\nflag: true\ntrigger: on\n", "f.yaml").data
        assert data == {"on": "yes", "off": "no", "flag": True, "trigger": "on"}

    def test_keys_are_strings_as_written(self) -> None:
        """A key `1` or `null` names something: it stays the text written."""
        assert load_yaml_text("1: a\nnull: b\n1.0: c\n", "f.yaml").data == {"1": "a", "null": "b", "1.0": "c"}

    def test_numbers_follow_the_core_schema(self) -> None:
        """Sexagesimal `1:20` is a string (YAML 1.1 made it 80); octal is 0o."""
        data = load_yaml_text("a: 1:20\nb: 0o17\nc: 0x1f\nd: 1.5e3\ne: ~\nf: 010\n", "f.yaml").data
        assert data == {"a": "1:20", "b": 15, "c": 31, "d": 1500.0, "e": None, "f": 10}

    def test_lines_are_kept(self) -> None:
        located = load_yaml_text("a:\n  b:\n    - x\n    - y\n", "f.yaml")
        assert located.line(("a", "b", 1)) == 4 and located.line(("a", "b")) == 2


class TestRefusals:
    def test_a_recursive_alias_is_a_clear_error(self) -> None:
        """`a: &a [*a]` would be a RecursionError; it is refused naming the line."""
        assert "f.yaml:2: recursive alias" in refused("x: 1\na: &a [*a]\n")

    def test_a_billion_laughs_file_stops_early(self) -> None:
        """Aliases that expand exponentially are counted and refused before memory runs out."""
        levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
        levels += [f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
        assert "YAML bomb" in refused("\n".join(levels) + "\n")

    def test_deep_nesting_is_refused(self) -> None:
        assert f"nested more than {MAX_DEPTH} levels deep" in refused("x: " + "[" * 1000 + "]" * 1000 + "\n")
        assert f"nested more than {MAX_DEPTH} levels deep" in refused("x: " + "{a: " * 500 + "1" + "}" * 500 + "\n")
        # Deep enough to overflow the C composer's stack (a SIGSEGV) if it were reached; one line of "- " too.
        assert "f.yaml:1: nested more than" in refused("x: " + "[" * 100_000 + "]" * 100_000 + "\n")
        assert "f.yaml:1: nested more than" in refused("- " * 100_000 + "x\n")

    def test_an_integer_with_thousands_of_digits_is_refused(self) -> None:
        assert "f.yaml:2: invalid YAML: integer of 5000 digits is too long" in refused("a: 1\nb: " + "7" * 5000 + "\n")

    def test_lone_surrogates_are_refused(self) -> None:
        """From an escape or from text handed in by an embedding program: no store or terminal takes them."""
        assert "f.yaml:2:" in refused('a: 1\nname: "\\ud800"\n')
        assert "f.yaml:2: a lone surrogate" in refused("a: 1\nname: x\ud800\n")

    def test_control_characters_name_the_line(self) -> None:
        message = refused("a: 1\nb: \x07\n")
        assert message.startswith("f.yaml:2: invalid YAML") and "\n" not in message

    def test_non_utf8_names_the_line(self, tmp_path: Path) -> None:
        path = tmp_path / "w.yaml"
        path.write_bytes(b"name: x\ninitial: a\nstates: {a: \xff\xfe}\n")
        with pytest.raises(WorkflowError) as info:
            load_yaml_file(path)
        assert str(info.value).startswith(f"{path}:3: not UTF-8 text")

    def test_python_tags_are_refused(self) -> None:
        assert "f.yaml:1: tag" in refused("x: !!python/object/apply:os.system [echo hi]\n")
        assert "f.yaml:1: invalid YAML" in refused("x: !!python/name:os.system\n")
