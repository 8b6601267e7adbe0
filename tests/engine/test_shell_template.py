"""Values in shell command templates: whatever quotes the author wrote around `{{ x }}`,
a value is data, never a command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.engine.shell_template import check_shell_template, render_shell
from sherpa_skills.errors import UsageError

HOSTILE = [
    "$(touch pwned)",
    "`touch pwned`",
    "'; touch pwned; '",
    '"; touch pwned; "',
    "\\",
    "a\\",
    "\\'; touch pwned; \\'",
    '\\"; touch pwned; \\"',
    "x\ntouch pwned",
    "x\r\ntouch pwned\r\n",
    "${IFS}touch${IFS}pwned",
    "; touch pwned #",
    "&& touch pwned",
    "| tee pwned",
    "> pwned",
    "*",
    "-rf",
    "$(touch${IFS}pwned)",
    '"$(touch pwned)"',
    "'$(touch pwned)'",
    "’; touch pwned; ‘",
    "“$(touch pwned)”",
    "x\nEOF\ntouch pwned\nEOF",
    ")",
    "); touch pwned; (",
    "$((1))$(touch pwned)",
    "{{ 7 * 7 }}",
    "$HOME",
    "#",
    "pwned'\"`$\\",
    "\x00",
    "a\x00; touch pwned",
    "\\\n$(touch pwned)",
    "' \"$(touch pwned)\" '",
]

#: The quoting contexts people write, with what the command prints for a value v.
CONTEXTS: dict[str, tuple[str, object]] = {
    "bare": ("printf '%s\\n' {{ x }}", lambda v: v),
    "double": ('printf "%s\\n" "{{ x }}"', lambda v: v),
    "single": ("printf '%s\\n' '{{ x }}'", lambda v: v),
    "word": ("printf '%s\\n' pre{{ x }}post", lambda v: f"pre{v}post"),
    "double_word": ('printf "%s\\n" "pre{{ x }}post"', lambda v: f"pre{v}post"),
    "single_word": ("printf '%s\\n' 'pre{{ x }}post'", lambda v: f"pre{v}post"),
    "substitution": ("printf '%s\\n' \"$(printf '%s' {{ x }})\"", lambda v: v.rstrip("\n")),
    "double_in_substitution": ('printf "%s\\n" "$(printf "%s" "{{ x }}")"', lambda v: v.rstrip("\n")),
    "single_in_substitution": (
        "printf '%s\\n' $(printf '%s' '{{ x }}' | od -An -tx1 | tr -d ' \\n')",
        lambda v: v.encode().hex(),
    ),
    "heredoc": ("tr x x <<EOF\n{{ x }}\nEOF", lambda v: v),  # tr, not cat: capture drops a lone `cat` as look-around
    "quoted_heredoc": ("tr x x <<'EOF'\n{{ x }}\nEOF", lambda v: v),
    "indented_heredoc": ("tr x x <<-END\n\t{{ x }}\n\tEND", lambda v: v),
    "assignment": ('v={{ x }}; printf "%s\\n" "$v"', lambda v: v),
    "two_values": ("printf '%s|%s\\n' {{ x }} \"{{ x }}\"", lambda v: f"{v}|{v}"),
}


def _refusal_expected(context: str, value: str) -> bool:
    """NUL can reach no command; a here-document line cannot hold a newline. Everything else must go through."""
    return "\x00" in value or ("heredoc" in context and "\n" in value)


def _sh(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["/bin/sh", "-c", command], cwd=cwd, capture_output=True, timeout=10)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


class TestRender:
    @pytest.mark.parametrize("context", list(CONTEXTS))
    def test_every_hostile_value_is_printed_verbatim_and_creates_nothing(self, tmp_path: Path, context: str) -> None:
        """Each value, in each quoting context, reaches the command as exactly one piece of data, or is refused."""
        template, expected = CONTEXTS[context]
        for value in HOSTILE:
            if _refusal_expected(context, value):
                with pytest.raises(UsageError):
                    render_shell(template, {"x": value})
                continue
            command = render_shell(template, {"x": value})
            done = _sh(command, tmp_path)
            assert list(tmp_path.iterdir()) == [], (context, value, command)
            assert done.returncode == 0, (context, value, command, done.stderr)
            assert done.stdout == expected(value) + "\n", (context, value, command)  # type: ignore[operator]

    @pytest.mark.parametrize(
        "template, where",
        [
            ("echo `echo {{ x }}`", "`…`"),
            ('echo "`echo {{ x }}`"', "`…`"),
            ("echo $(( {{ x }} + 1 ))", "$((…))"),
            ("(( n = {{ x }} ))", "((…))"),
            ("echo ${HOME:-{{ x }}}", "${…}"),
            ("echo hi # {{ x }}", "comment"),
            ("echo \\{{ x }}", "backslash"),
            ('echo "\\{{ x }}"', "backslash"),
            ("echo ${{ x }}", "$"),
            ('echo "${{ x }}"', "$"),
            ("cat <<{{ x }}\nhi\n", "delimiter"),
            ("echo $'a' {{ x }}", "$'"),
            ("echo $(case a in a) echo {{ x }};; esac)", "case"),
            ("cat <<EOF\n$(echo {{ x }})\nEOF", "here-document"),
        ],
    )
    def test_places_no_escaping_makes_safe_are_refused_before_any_run(self, template: str, where: str) -> None:
        """Backticks, arithmetic, ${…}, comments, right after \\ or $: refused with the place named, at load time."""
        with pytest.raises(UsageError) as caught:
            check_shell_template(template)
        assert where in str(caught.value)
        with pytest.raises(UsageError):
            render_shell(template, {"x": "a"})

    def test_a_value_cannot_complete_a_here_document_delimiter(self) -> None:
        """`E{{ x }}` with x = 'OF' would end the here-document early: refused."""
        with pytest.raises(UsageError, match="here-document delimiter"):
            render_shell("cat <<EOF\nE{{ x }}\nEOF", {"x": "OF"})
        assert render_shell("cat <<EOF\nE{{ x }}\nEOF", {"x": "OK"}) == "cat <<EOF\nEOK\nEOF"

    def test_plain_commands_and_numbers_render_as_before(self) -> None:
        """A safe word stays unquoted-looking where it can; non-strings go through str()."""
        assert render_shell("tar -czf build/{{ name }}.tar.gz notes", {"name": "n"}) == "tar -czf build/n.tar.gz notes"
        assert render_shell("sleep {{ n }}", {"n": 2}) == "sleep 2"
        assert render_shell('echo "{{ a }} and {{ b }}"', {"a": "x y", "b": "$z"}) == 'echo "x y and \\$z"'


# ---------------------------------------------------------------- through the CLI: run --input and learn replay --param


def _workflow(tmp_path: Path, sandbox: Path) -> Path:
    actions = [
        {"shell": {"command": template, "cwd": str(sandbox)}, "save_as": f"out_{name}"}
        for name, (template, _) in CONTEXTS.items()
    ]
    spec = {
        "name": "quoting",
        "initial": "go",
        "inputs": {"x": {"required": True}},
        "states": {"go": {"final": True, "on_enter": actions}},
    }
    path = tmp_path / "quoting.yaml"
    path.write_text(json.dumps(spec))  # JSON is YAML, and keeps every quote of the commands exact
    return path


def _procedure(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> str:
    steps = {"description": "print x in every quoting", "steps": [{"command": t} for t, _ in CONTEXTS.values()]}
    path = tmp_path / "steps.yaml"
    path.write_text(json.dumps(steps))
    code = main(["learn", "capture-success", "quoting", "--steps-file", str(path), "--home", str(home), "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    captured = json.loads(out)
    assert len(captured["steps"]) == len(CONTEXTS)
    return captured["id"]


@pytest.mark.slow
class TestThroughTheCli:
    def test_run_input_and_replay_param_never_run_a_value(
        self, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every hostile value through `run --input` (shell action) and `learn replay --param --execute --yes`
        creates nothing; each one is printed verbatim or the run stops with a one-line reason."""
        sandbox = tmp_path / "sandbox"
        sandbox.mkdir()
        monkeypatch.chdir(sandbox)
        workflow = _workflow(tmp_path, sandbox)
        procedure = _procedure(tmp_path, home, capsys)
        assert (
            main(["learn", "promote", procedure, "--home", str(home)]) == 0
        )  # captured once is not proof: vouch for it
        capsys.readouterr()
        for value in HOSTILE:
            code = main(["run", str(workflow), "--input", f"x={value}", "--home", str(home), "--json"])
            out, err = capsys.readouterr()
            assert "Traceback" not in err
            result = json.loads(out)
            assert list(sandbox.iterdir()) == [], ("run", value)
            if any(_refusal_expected(c, value) for c in CONTEXTS):
                assert code == 1 and result["status"] == "error" and "\n" not in result["error"].strip(), (
                    value,
                    result["error"],
                )
            else:
                assert code == 0, (value, result["error"])
                x = result["context"]["x"]
                for name, (_, expected) in CONTEXTS.items():
                    assert result["context"][f"out_{name}"]["stdout"] == expected(str(x)) + "\n", (name, value)  # type: ignore[operator]

            code = main(
                [
                    "learn",
                    "replay",
                    "quoting",
                    "--procedure",
                    procedure,
                    "--param",
                    f"x={value}",
                    "--execute",
                    "--yes",
                    "--home",
                    str(home),
                    "--json",
                ]
            )
            out, err = capsys.readouterr()
            assert "Traceback" not in err
            replay = json.loads(out)
            assert list(sandbox.iterdir()) == [], ("replay", value)
            if any(_refusal_expected(c, value) for c in CONTEXTS):
                assert replay["status"] == "refused" and ("cannot" in replay["reason"] or "NUL" in replay["reason"]), (
                    replay
                )
            else:
                assert replay["status"] == "succeeded", (value, replay)


class TestValidate:
    def test_validate_names_the_line_of_a_template_in_backticks(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`sherpa-skills validate` refuses a value inside `…` with FILE:LINE and exit 2."""
        path = tmp_path / "bad.yaml"
        path.write_text(
            "name: bad\ninitial: a\nstates:\n  a:\n    final: true\n    on_enter:\n"
            '      - shell: {command: "echo `cat {{ f }}`"}\n'
        )
        code = main(["validate", str(path)])
        out, err = capsys.readouterr()
        assert code == 2
        assert f"{path}:7:" in out + err and "`…`" in out + err
        assert "Traceback" not in out + err

    def test_capture_refuses_a_step_whose_template_cannot_be_escaped(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A procedure is never stored with a step that replay could not render safely."""
        path = tmp_path / "steps.yaml"
        path.write_text(json.dumps([{"command": "echo $(( {{ n }} + 1 ))"}, {"command": "true"}]))
        code = main(
            ["learn", "capture-success", "arith", "--steps-file", str(path), "--home", str(tmp_path / "home"), "--json"]
        )
        out, err = capsys.readouterr()
        assert code != 0
        assert "$((…))" in out + err and "Traceback" not in out + err
