"""The real session logs in ../shared/acceptance-sessions (read in place, never copied): counts checked by reading them.

Set SHERPA_SKILLS_ACCEPTANCE_SESSIONS to that folder (`.ci/run` does); without it these tests are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.sessions import SessionStore, import_paths

ENV = "SHERPA_SKILLS_ACCEPTANCE_SESSIONS"

# file (relative to the folder) -> (commands, succeeded, failed, rejected, unknown), from reading each file.
EXPECTED = {
    # Claude Code 1.0.98, five sub-agents inline as sidechain lines: 9 is_error results,
    # 3 commands sent to the background.
    "claude-code/d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": (61, 49, 9, 0, 3),
    # Claude Code 2.0.76: two `Exit code 1` results (zsh "no matches found").
    "claude-code/codemie-ai__codemie-code/session-196820da.jsonl": (39, 37, 2, 0, 0),
    # Claude Code 2.1.38 sub-agent file: `tree` not installed, `Exit code 127`.
    "claude-code/marot__spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl": (18, 17, 1, 0, 0),
    # Claude Code 2.1.38: the only Bash call was rejected by the user ("doesn't want to proceed"): not a failure.
    "claude-code/marot__spotter/short.jsonl": (1, 0, 0, 1, 0),
    # Claude Code 2.1.74: `git diff HEAD` output persisted to a tool-results file that was not committed.
    "claude-code/aaaAlexanderaaa__cchistory/b98095d7-b7ee-4d23-9d4c-beb9725d1dc5.jsonl": (5, 5, 0, 0, 0),
    # codex-tui 0.125.0 unified exec: 43 exec_command calls settled by exec_command_end (exit 2 once,
    # exit 1 three times).
    "codex/codemie-ai__codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl": (
        43,
        39,
        4,
        0,
        0,
    ),
    # Codex 0.80.0, truncated upstream: one shell_command, "Exit code: 0".
    "codex/aaaAlexanderaaa__cchistory/rollout-2026-01-22T10-15-23-019be37c-2706-70c0-8e0e-51985de49079.jsonl": (
        1,
        1,
        0,
        0,
        0,
    ),
    # bash with HISTTIMEFORMAT: 398 `#epoch` stamps, each followed by one command.
    "shell/sanekits__localhist/home1.bash_history": (398, 0, 0, 0, 398),
    # zsh EXTENDED_HISTORY: 10,113 `: epoch:0;` headers; 63 more lines continue multi-line commands.
    "shell/dpretet__dotfiles/zsh_history": (10113, 0, 0, 0, 10113),
    # asciinema v2 with typed input: `vim` typed at a fish prompt; the `:q` typed inside vim is not a command.
    "asciinema/asciinema__asciinema/demo.cast": (1, 0, 0, 0, 1),
}


@pytest.fixture(scope="module")
def folder() -> Path:
    value = os.environ.get(ENV)
    if not value:
        pytest.skip(
            f"{ENV} is not set: point it at ../shared/acceptance-sessions (the real session logs; .ci/run sets it)"
        )
    path = Path(value)
    assert path.is_dir(), f"{ENV}={value} is not a folder"
    return path


@pytest.fixture(scope="module")
def imported(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("acceptance-home")
    summary = import_paths([folder], home=home, settle_seconds=float("inf"))
    with SessionStore(home=home) as store:
        commands = store.commands_since(0)
        files = store.files()
    again = import_paths([folder], home=home, settle_seconds=float("inf"))
    return {"summary": summary, "again": again, "commands": commands, "files": files, "home": home}


def of(imported: dict[str, Any], folder: Path, relative: str) -> list[Any]:
    path = str((folder / relative).resolve())
    return [c for c in imported["commands"] if c.source_file == path]


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_counts_per_file(folder: Path, imported: dict[str, Any], relative: str) -> None:
    commands = of(imported, folder, relative)
    counts = (
        len(commands),
        *(sum(c.outcome == o for c in commands) for o in ("success", "failure", "rejected", "unknown")),
    )
    assert counts == EXPECTED[relative]


def test_whole_folder(imported: dict[str, Any]) -> None:
    summary, again = imported["summary"], imported["again"]
    totals = [sum(v[i] for v in EXPECTED.values()) for i in range(5)]
    assert (
        summary.files,
        summary.sessions,
        summary.commands,
        summary.succeeded,
        summary.failed,
        summary.rejected,
        summary.unknown,
    ) == (10, 10, *totals)
    assert (summary.skipped_lines, summary.unreadable_files, summary.unrecognised_files, summary.errors) == (
        0,
        0,
        0,
        [],
    )
    assert (again.commands, again.unchanged_files) == (0, 10)
    assert all(f.offset == f.size and f.pending_calls == 0 for f in imported["files"])


def test_the_rejected_call_is_rejected_not_failed(folder: Path, imported: dict[str, Any]) -> None:
    (cmd,) = of(imported, folder, "claude-code/marot__spotter/short.jsonl")
    assert (cmd.command, cmd.outcome, cmd.exit_code) == ("mix phx.server 2>&1 | head -80", "rejected", None)
    assert cmd.session_id == "55604662-cf2a-4331-851a-ec234028f8ca" and cmd.cwd == "/home/marco/projects/spotter"


def test_subagent_file_and_exit_code_127(folder: Path, imported: dict[str, Any]) -> None:
    commands = of(
        imported,
        folder,
        "claude-code/marot__spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl",
    )
    assert {(c.session_id, c.agent, c.sidechain) for c in commands} == {
        ("6c2214d7-b87e-4432-8e41-22ba294ea584", "afc096d", True)
    }
    (failed,) = [c for c in commands if c.outcome == "failure"]
    assert (
        failed.command.startswith("tree ")
        and failed.exit_code == 127
        and failed.output == "(eval):1: command not found: tree"
    )


def test_inline_sidechains_and_background_commands(folder: Path, imported: dict[str, Any]) -> None:
    commands = of(
        imported, folder, "claude-code/d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    )
    assert all(c.sidechain for c in commands) and len({c.agent for c in commands}) == 5  # one thread per Task sub-agent
    background = [c.command for c in commands if c.outcome == "unknown"]
    assert background == ["pnpm dev --port 3001", "npm run dev", "npx next dev --port 3000"]
    assert [c.command for c in commands if c.outcome == "failure"].count("npm run build") == 4


def test_exit_codes_from_the_claude_code_prefix(folder: Path, imported: dict[str, Any]) -> None:
    commands = of(imported, folder, "claude-code/codemie-ai__codemie-code/session-196820da.jsonl")
    assert [c.exit_code for c in commands if c.outcome == "failure"] == [1, 1]


def test_persisted_output_reference_is_kept(folder: Path, imported: dict[str, Any]) -> None:
    commands = of(imported, folder, "claude-code/aaaAlexanderaaa__cchistory/b98095d7-b7ee-4d23-9d4c-beb9725d1dc5.jsonl")
    (diff,) = [c for c in commands if c.command == "git diff HEAD"]
    assert (
        diff.info["persisted_output"].endswith("/tool-results/bx04dz8mt.txt")
        and diff.info["persisted_output_found"] is False
    )
    assert diff.output.startswith("diff --git a/AGENTS.md b/AGENTS.md") and len(diff.output) == 2000


def test_codex_exit_codes_and_cwd(folder: Path, imported: dict[str, Any]) -> None:
    commands = of(
        imported,
        folder,
        "codex/codemie-ai__codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    )
    assert [c.exit_code for c in commands if c.outcome == "failure"] == [2, 1, 1, 1]
    assert {c.tool for c in commands} == {
        "exec_command"
    }  # write_stdin polls, apply_patch and update_plan are not commands
    assert {c.cwd for c in commands} == {"/Users/Sample_User/repos/codemie-ai/codemie-code"}
    assert {c.session_id for c in commands} == {"019e1625-789d-76c0-80ab-3724b5ddb799"}
    (old,) = of(
        imported,
        folder,
        "codex/aaaAlexanderaaa__cchistory/rollout-2026-01-22T10-15-23-019be37c-2706-70c0-8e0e-51985de49079.jsonl",
    )
    assert (old.command, old.exit_code, old.tool) == ("ls", 0, "shell_command")


def test_shell_histories(folder: Path, imported: dict[str, Any]) -> None:
    bash = of(imported, folder, "shell/sanekits__localhist/home1.bash_history")
    assert (bash[0].command, bash[0].timestamp) == ("bash -ls", 1663406862.0) and all(c.timestamp for c in bash)
    zsh = of(imported, folder, "shell/dpretet__dotfiles/zsh_history")
    by_line = {c.line: c.command for c in zsh}
    assert by_line[1076] == "PROMPT='%(?.%F{green}√.%F{red}?%?)%f %B%F{240}%1~%f%b %# '"  # metafied bytes undone
    assert "\ufffd" not in "".join(by_line.values())
    assert by_line[170] == "npm i\nnpm run build\nhttp-server test &"
    assert (
        by_line[188] == "svutRun -t fsm_example_testbench.sv\\"
        and by_line[189] == "svutRun -t fsm_example_testbench.sv"
    )


def test_asciinema_typed_command_and_cwd_from_the_title(folder: Path, imported: dict[str, Any]) -> None:
    (vim,) = of(imported, folder, "asciinema/asciinema__asciinema/demo.cast")
    assert (vim.command, vim.cwd, vim.outcome, vim.timestamp) == (
        "vim",
        "/Users/sickill/code/asciinema/asciinema",
        "unknown",
        1509091819.511526,
    )
