"""Values that land in code another program runs (`sh -c "…"`, `eval`, `ssh host "…"`, `| sh`, `python3 -c`): quoting
for the outer shell hands the value to the inner one as code, so there a value must be a plain word, or is refused."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_shell_template import HOSTILE  # noqa: E402

from sherpa_skills.cli import main
from sherpa_skills.engine.shell_code import code_values, plain_word
from sherpa_skills.engine.shell_template import check_shell_template, render_shell, stdin_reader
from sherpa_skills.errors import UsageError

PLAIN = ["web", "v1_2", "v1.2.3", "a/b-c_d", "user@host:22", "50%", "k=v,w", "-rf"]

#: Commands whose `{{ x }}` is code for a second shell or an interpreter, with what each prints for a plain word v.
NESTED: dict[str, tuple[str, object]] = {
    "sh_c_double": ("sh -c \"printf '%s\\n' {{ x }}\"", lambda v: v),
    "sh_c_single": ("sh -c 'printf \"%s\\n\" {{ x }}'", lambda v: v),
    "bash_lc": ("bash -lc \"printf '%s\\n' '{{ x }}'\"", lambda v: v),
    "path_and_options": ("/bin/sh -e -o errexit -c \"printf '%s\\n' {{ x }}\"", lambda v: v),
    "bare_code": ("sh -c printf\\ \\'%s\\\\n\\'\\ {{ x }}", lambda v: v),
    "eval": ("eval \"printf '%s\\n' {{ x }}\"", lambda v: v),
    "eval_words": ("eval printf \"'%s\\n'\" {{ x }}", lambda v: v),
    "wrapped": ("env A=1 timeout -s KILL 5 nice -n 1 sh -c \"printf '%s\\n' {{ x }}\"", lambda v: v),
    "assignment_first": ("A=1 sh -c \"printf '%s\\n' {{ x }}\"", lambda v: v),
    "in_a_condition": ("if true; then sh -c \"printf '%s\\n' {{ x }}\"; fi", lambda v: v),
    "in_substitution": ("printf '%s\\n' \"$(sh -c \"printf '%s' {{ x }}\")\"", lambda v: v),
    "xargs": ("echo a | xargs -I{} sh -c \"printf '%s\\n' {{ x }}\"", lambda v: v),
    "find_exec": ("find . -maxdepth 0 -exec sh -c \"printf '%s\\n' {{ x }}\" \\;", lambda v: v),
    "piped_to_sh": ("echo \"printf '%s\\n' {{ x }}\" | sh", lambda v: v),
    "piped_to_sh_later": ("echo \"printf '%s\\n' {{ x }}\" | cat | bash -s", lambda v: v),
    "heredoc_to_sh": ("sh <<EOF\nprintf '%s\\n' {{ x }}\nEOF", lambda v: v),
    "herestring_to_sh": ("sh <<< \"printf '%s\\n' {{ x }}\"", lambda v: v),
    "python": ("python3 -c \"print('{{ x }}')\"", lambda v: v),
    "python_stdin": ("echo \"print('{{ x }}')\" | python3 -", lambda v: v),
    "perl": ("perl -le 'print \"{{ x }}\"'", lambda v: v),
    "awk": ("awk 'BEGIN { print \"{{ x }}\" }'", lambda v: v),
    "awk_options": ("awk -F : -v n=1 'BEGIN { print \"{{ x }}\" }'", lambda v: v),
    "sed": ("echo a | sed -e 's,a,{{ x }},'", lambda v: v),
    "sed_script": ("echo a | sed -n 's,a,{{ x }},p'", lambda v: v),
    # The outer shell expands the variable before the second program gets its code: the value arrives as code.
    "through_a_variable": ("v={{ x }}; sh -c \"printf '%s\\n' $v\"", lambda v: v),
    "through_export": ("export v={{ x }} && sh -c \"printf '%s\\n' ${v}\"", lambda v: v),
    "through_a_loop": ("for h in {{ x }}; do sh -c \"printf '%s\\n' $h\"; done", lambda v: v),
    "through_a_heredoc": ("v={{ x }}\nsh <<EOF\nprintf '%s\\n' $v\nEOF", lambda v: v),
}

#: Where the same value is data: an argument after the code (`$1`), a file name, an ordinary command's argument.
DATA: dict[str, str] = {
    "positional": 'sh -c \'printf "%s\\n" "$1"\' _ {{ x }}',
    "script_file_argument": "bash /dev/stdin {{ x }} <<'EOF'\nprintf '%s\\n' \"$1\"\nEOF",
    "ordinary": "printf '%s\\n' {{ x }}",
    "python_argument": "python3 -c 'import sys; print(sys.argv[1])' {{ x }}",
    "pipe_not_to_a_shell": "printf '%s\\n' {{ x }} | cat",
    "heredoc_not_to_a_shell": "tr x x <<EOF\n{{ x }}\nEOF",
    "variable_the_inner_shell_expands": 'v={{ x }}; export v; sh -c \'printf "%s\\n" "$v"\'',
    "variable_in_a_quoted_heredoc": "v={{ x }}; export v\nsh <<'EOF'\nprintf '%s\\n' \"$v\"\nEOF",
}


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["/bin/bash", "-c", command], cwd=cwd, capture_output=True, timeout=20)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def _available(template: str) -> bool:
    return all(shutil.which(tool) for tool in ("perl", "python3", "awk", "sed") if tool in template)


class TestNestedCode:
    @pytest.mark.parametrize("context", list(NESTED))
    def test_a_hostile_value_in_code_is_refused_and_nothing_runs(self, tmp_path: Path, context: str) -> None:
        """Every hostile value that is not a plain word is refused where it would be code; nothing is created."""
        template, _ = NESTED[context]
        check_shell_template(template)  # the template itself is fine: only values decide
        for value in HOSTILE:
            if value == "-rf":
                continue  # a plain word: passes (it can still be an option, as anywhere)
            with pytest.raises(UsageError) as caught:
                render_shell(template, {"x": value})
            assert "\n" not in str(caught.value).strip(), (context, value)
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize("context", list(NESTED))
    def test_a_plain_word_goes_through_and_arrives_as_it_is(self, tmp_path: Path, context: str) -> None:
        template, expected = NESTED[context]
        if not _available(template):
            pytest.skip("interpreter not installed")
        parts = template.replace("{{ x }}", "\x00x\x00").split("\x00")
        (program,) = set(code_values(parts).values())
        plain = [v for v in PLAIN if plain_word(program).fullmatch(v)]
        assert len(plain) >= 2
        for value in plain:
            command = render_shell(template, {"x": value})
            done = _run(command, tmp_path)
            assert done.returncode == 0, (context, value, command, done.stderr)
            assert done.stdout == expected(value) + "\n", (context, value, command)  # type: ignore[operator]

    def test_the_refusal_names_the_program_and_the_safe_way(self) -> None:
        with pytest.raises(UsageError) as caught:
            render_shell('ssh -p 22 web1 "systemctl restart {{ x }}"', {"x": "web; touch pwned"})
        message = str(caught.value)
        assert "ssh" in message and "plain word" in message and '"$1"' in message
        with pytest.raises(UsageError, match="python3"):
            render_shell("python3 -c \"print('{{ x }}')\"", {"x": "'); import os; os.system('id'); ('"})

    @pytest.mark.parametrize("context", list(DATA))
    def test_where_the_value_is_data_any_value_is_printed_verbatim(self, tmp_path: Path, context: str) -> None:
        """The way the refusal points to (pass it as an argument) takes every hostile value as data."""
        template = DATA[context]
        for value in HOSTILE:
            if "\x00" in value or ("\n{{ x }}" in template and "\n" in value):
                with pytest.raises(UsageError):  # as anywhere: NUL, or a newline in a here-document's line
                    render_shell(template, {"x": value})
                continue
            if context == "python_argument" and value.startswith("-"):
                continue  # python3 reads a leading dash as its own option: not a quoting matter
            command = render_shell(template, {"x": value})
            done = _run(command, tmp_path)
            assert list(tmp_path.iterdir()) == [], (context, value, command)
            assert done.stdout == value + "\n", (context, value, command, done.stdout)


class TestWhereCodeIs:
    @pytest.mark.parametrize(
        "template, programs",
        [
            ('sh -c "echo {{ x }}" _ {{ y }}', {0: "sh"}),
            ("ssh -i key -o BatchMode=yes host ls {{ x }} {{ y }}", {0: "ssh", 1: "ssh"}),
            ("ssh host < {{ x }}", {}),
            ('su - deploy -c "make {{ x }}"', {0: "su"}),
            ('sudo -u www-data bash -c "touch {{ x }}" && echo {{ y }}', {0: "bash"}),
            ('docker exec -it -e A=1 web sh -c "ls {{ x }}"', {0: "sh"}),
            ('kubectl exec pod -- bash -c "ls {{ x }}"', {0: "bash"}),
            ("watch -n 1 ls {{ x }}", {0: "watch"}),
            ('sqlite3 {{ x }} "select {{ y }}"', {1: "sqlite3"}),
            ('psql -c "select {{ x }}" {{ y }}', {0: "psql"}),
            ("grep {{ x }} file # sh -c {{ y }}", {}),
            ("cat > {{ x }} <<EOF\n{{ y }}\nEOF", {}),
            ("ssh host <<'EOF'\nls {{ x }}\nEOF\necho {{ y }}", {0: "ssh"}),
            ("echo {{ x }} || sh", {}),
            ('DIR={{ x }}; ssh host "cd $DIR && make {{ y }}"', {0: "ssh", 1: "ssh"}),
            ("for h in {{ x }}; do ssh $h uptime; done", {}),
            ('for h in a {{ x }}; do ssh host "ping ${h}"; done', {0: "ssh"}),
            ("X={{ x }}; sh -c 'echo $X'", {}),
            ('X={{ x }}; Y=$X; eval "echo $Y"', {0: "eval"}),
            ('$SHELL -c "echo {{ x }}"', {0: "$SHELL"}),
            ('"${PYTHON:-python3}" -c "print(\'{{ x }}\')" {{ y }}', {0: "${PYTHON:-python3}"}),
            ("$EDITOR {{ x }}", {}),
        ],
    )
    def test_which_values_land_in_code(self, template: str, programs: dict[int, str]) -> None:
        parts = template.replace("{{ x }}", "\x00x\x00").replace("{{ y }}", "\x00y\x00").split("\x00")
        assert code_values(parts) == programs


@pytest.mark.slow
def test_run_input_into_a_second_shell_is_refused_through_the_cli(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --input` of a workflow whose step hands the input to `bash -c`: the attack stops with a one-line reason and
    creates nothing; a plain word runs."""
    monkeypatch.chdir(tmp_path)
    spec = {
        "name": "greet",
        "initial": "go",
        "inputs": {"who": {"required": True}},
        "states": {"go": {"final": True, "on_enter": [{"shell": {"command": 'bash -c "echo hello {{ who }}"'}}]}},
    }
    path = tmp_path / "greet.yaml"
    path.write_text(json.dumps(spec))
    code = main(["run", str(path), "--input", "who=you; touch pwned", "--home", str(home), "--json"])
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert code == 1 and result["status"] == "error" and "bash" in result["error"], result
    assert "Traceback" not in err
    assert not (tmp_path / "pwned").exists()
    assert main(["run", str(path), "--input", "who=you", "--home", str(home), "--json"]) == 0


class TestStdinOfTheShellAction:
    """`shell: {command: sh, stdin: "echo {{ x }}"}` feeds its value to a shell as code: refused when the workflow
    loads, as a value in `sh -c "…"` is refused when rendered."""

    @pytest.mark.parametrize(
        "command", ["sh", "bash -s", "cd /tmp && python3 -", "cat | sh", "ssh web1", "true; bash", "env A=1 sh"]
    )
    def test_a_command_that_runs_its_stdin(self, command: str) -> None:
        assert stdin_reader(command) is not None

    @pytest.mark.parametrize(
        "command",
        ["tr a-z A-Z", "sh -c 'cat'", "sh < /dev/null", "sh script.sh", "python3 -c 'print(1)'", "sh <<EOF\nls\nEOF"],
    )
    def test_a_command_that_reads_its_stdin_as_data(self, command: str) -> None:
        assert stdin_reader(command) is None

    def _workflow(self, tmp_path: Path, command: str, stdin: object) -> Path:
        spec = {
            "name": "feed",
            "initial": "go",
            "inputs": {"x": {"required": True}},
            "states": {"go": {"final": True, "on_enter": [{"shell": {"command": command, "stdin": stdin}}]}},
        }
        path = tmp_path / "feed.yaml"
        path.write_text(json.dumps(spec, indent=1))
        return path

    def test_validate_refuses_a_template_in_a_shells_stdin_naming_the_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = self._workflow(tmp_path, "cd /tmp && sh", "echo {{ x }}")
        assert main(["validate", str(path)]) == 2
        out, err = capsys.readouterr()
        assert f"{path}:" in out + err and "sh reads it as code" in out + err and "Traceback" not in out + err

    def test_the_attack_through_run_input_never_runs(
        self, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        path = self._workflow(tmp_path, "sh", "echo {{ x }}")
        code = main(["run", str(path), "--input", "x=hi; touch pwned", "--home", str(home), "--json"])
        capsys.readouterr()
        assert code == 2 and not (tmp_path / "pwned").exists()

    def test_data_for_a_program_and_a_whole_reference_are_fed_as_they_are(
        self, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Where the command reads its stdin as data, the template stays; so does `from_context` given whole."""
        for command, stdin in (("tr a-z A-Z", "{{ x }}; touch pwned"), ("tr a-z A-Z", {"from_context": "x"})):
            path = self._workflow(tmp_path, command, stdin)
            code = main(["run", str(path), "--input", "x=hi; touch pwned", "--home", str(home), "--json"])
            out = capsys.readouterr().out
            assert code == 0, out
            assert not (tmp_path / "pwned").exists()


@pytest.mark.slow
def test_learn_replay_param_into_a_second_shell_is_refused(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay door: a promoted procedure whose step hands its parameter to `sh -c`, replayed with
    `--param … --execute --yes`: the attack is refused and creates nothing; a plain value runs the step."""
    monkeypatch.chdir(tmp_path)
    steps = tmp_path / "steps.yaml"
    steps.write_text(
        json.dumps({"description": "mark a service", "steps": [{"command": "sh -c 'touch made-{{ name }}'"}]})
    )
    assert main(["learn", "capture-success", "mark", "--steps-file", str(steps), "--home", str(home), "--json"]) == 0
    procedure = json.loads(capsys.readouterr().out)["id"]
    assert main(["learn", "promote", procedure, "--home", str(home)]) == 0
    capsys.readouterr()

    def replay(value: str) -> dict[str, object]:
        argv = ["learn", "replay", "mark", "--procedure", procedure, "--param", f"name={value}"]
        main([*argv, "--execute", "--yes", "--home", str(home), "--json"])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return json.loads(out)  # type: ignore[no-any-return]

    refused = replay("web; touch pwned")
    assert refused["status"] == "refused" and "sh runs" in str(refused["reason"]), refused
    assert not list(tmp_path.glob("made-*")) and not (tmp_path / "pwned").exists()
    assert replay("web")["status"] == "succeeded"
    assert (tmp_path / "made-web").exists() and not (tmp_path / "pwned").exists()
