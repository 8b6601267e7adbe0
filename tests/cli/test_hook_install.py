"""`hook install` / `hook uninstall`: merged into the agent's settings, a backup first, idempotent, exactly undone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sherpa_skills.cli.main import main
from sherpa_skills.sessions import SessionStore

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest's own dependency before 3.11
    import tomli as tomllib

OTHER = {"type": "command", "command": "~/bin/notify-me", "timeout": 5}


def settings(path: Path) -> dict:
    return json.loads(path.read_text())


def test_install_merges_into_existing_claude_settings_and_uninstall_restores_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / ".claude" / "settings.json"
    target.parent.mkdir()
    original = {
        "permissions": {"allow": ["Bash(make:*)"]},
        "hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [OTHER]}], "Notification": [{"hooks": [OTHER]}]},
    }
    target.write_text(json.dumps(original, indent=2))
    assert main(["hook", "install", "claude-code", "--project", "--dir", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["changed"] == ["PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"]
    assert json.loads(Path(out["backup"]).read_text()) == original
    merged = settings(target)
    assert merged["permissions"] == original["permissions"]
    assert merged["hooks"]["PostToolUse"][0] == {"matcher": "Write", "hooks": [OTHER]}
    ours = merged["hooks"]["PostToolUse"][1]
    assert ours["matcher"] == "Bash" and ours["hooks"][0]["command"].endswith("hook claude-code")
    assert "matcher" not in merged["hooks"]["Stop"][0]

    assert main(["hook", "install", "claude-code", "--project", "--dir", str(tmp_path), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["changed"] == [] and again["backup"] is None and settings(target) == merged

    assert main(["hook", "uninstall", "claude-code", "--project", "--dir", str(tmp_path), "--json"]) == 0
    removed = json.loads(capsys.readouterr().out)
    assert sorted(removed["changed"]) == sorted(["PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"])
    assert settings(target) == original


def test_install_into_a_user_settings_file_that_does_not_exist_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SHERPA_SKILLS_HOME", raising=False)
    assert main(["hook", "install", "claude-code", "--home", str(tmp_path / "h"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["file"] == str(tmp_path / ".claude" / "settings.json") and out["backup"] is None
    command = settings(Path(out["file"]))["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    assert command.endswith(f"hook claude-code --home {tmp_path / 'h'}")
    assert main(["hook", "uninstall", "claude-code", "--json"]) == 0
    capsys.readouterr()
    assert settings(Path(out["file"])) == {}


def test_codex_gets_bash_and_stop_hooks_and_is_told_about_the_feature_switch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hook", "install", "codex", "--project", "--dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "codex_hooks = true" in printed
    hooks = settings(tmp_path / ".codex" / "hooks.json")["hooks"]
    assert sorted(hooks) == ["PostToolUse", "Stop"]
    assert hooks["PostToolUse"][0]["matcher"] == "Bash"
    assert hooks["Stop"][0]["hooks"][0]["command"].endswith("hook codex")


def test_a_broken_settings_file_is_refused_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / ".claude" / "settings.json"
    target.parent.mkdir()
    target.write_text('{\n  "hooks": {\n    "Stop": [,]\n  }\n}\n')
    before = target.read_text()
    assert main(["hook", "install", "claude-code", "--project", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{target}:3: not valid JSON" in err and "Traceback" not in err
    assert target.read_text() == before and list(target.parent.iterdir()) == [target]
    target.write_text('{"hooks": {"Stop": {"not": "a list"}}}')
    assert main(["hook", "install", "claude-code", "--project", "--dir", str(tmp_path)]) == 2
    assert "'hooks' must map each event to a list" in capsys.readouterr().err


def test_uninstall_leaves_a_handler_someone_else_put_in_our_group(tmp_path: Path) -> None:
    assert main(["hook", "install", "claude-code", "--project", "--dir", str(tmp_path), "--json"]) == 0
    target = tmp_path / ".claude" / "settings.json"
    data = settings(target)
    data["hooks"]["Stop"][0]["hooks"].append(OTHER)
    target.write_text(json.dumps(data))
    assert main(["hook", "uninstall", "claude-code", "--project", "--dir", str(tmp_path), "--json"]) == 0
    assert settings(target) == {"hooks": {"Stop": [{"hooks": [OTHER]}]}}


def test_unknown_agent_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["hook", "install", "cursor"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'cursor'" in capsys.readouterr().err


def ours(data: dict, event: str) -> list[dict]:
    return [h for g in data["hooks"].get(event, []) for h in g["hooks"] if "hook " in h["command"]]


def test_a_home_path_with_a_space_and_quotes_installs_once_and_uninstalls_to_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    home = tmp_path / "my home" / "it's $(touch pwned) `x`"
    args = ["hook", "install", "claude-code", "--home", str(home), "--json"]
    for attempt in range(3):
        assert main(args) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["changed"] == ([] if attempt else ["PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"])
    target = tmp_path / ".claude" / "settings.json"
    data = settings(target)
    assert all(len(ours(data, event)) == 1 for event in data["hooks"])

    # What Claude Code does with the entry: run it through a shell, the event on stdin.
    command = ours(data, "PostToolUse")[0]["command"]
    event = {
        "session_id": "s1",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "make build"},
        "tool_response": {"stdout": "ok"},
        "tool_use_id": "toolu_space",
    }
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("SHERPA_SKILLS_HOME", None)
    done = subprocess.run(
        ["sh", "-c", command], input=json.dumps(event), capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    with SessionStore(home=home) as store:
        assert [c.call_id for c in store.commands_since(0)] == ["toolu_space"]
    assert not (tmp_path / "pwned").exists()

    assert main(["hook", "uninstall", "claude-code", "--json"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["changed"]) == sorted(data["hooks"])
    assert settings(target) == {}
    assert main(["hook", "uninstall", "claude-code", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed"] == []


def test_claude_code_tool_hooks_run_async_and_stop_and_session_end_do_not(tmp_path: Path) -> None:
    assert main(["hook", "install", "claude-code", "--project", "--dir", str(tmp_path), "--json"]) == 0
    data = settings(tmp_path / ".claude" / "settings.json")
    for event in ("PostToolUse", "PostToolUseFailure"):
        (handler,) = ours(data, event)
        assert handler["async"] is True and handler["type"] == "command"
    for event in ("Stop", "SessionEnd"):  # the last events of a `claude -p` run: an async one is killed at teardown
        (handler,) = ours(data, event)
        assert "async" not in handler
    assert main(["hook", "install", "codex", "--project", "--dir", str(tmp_path), "--json"]) == 0
    codex = settings(tmp_path / ".codex" / "hooks.json")
    assert all("async" not in h for event in codex["hooks"] for h in ours(codex, event))  # Codex skips async hooks


def test_an_older_install_and_its_duplicate_copies_become_one_current_entry(tmp_path: Path) -> None:
    target = tmp_path / ".claude" / "settings.json"
    target.parent.mkdir()
    stale = {"type": "command", "command": "/old/bin/sherpa-skills hook claude-code --home '/a home'", "timeout": 30}
    target.write_text(
        json.dumps(
            {
                "hooks": {
                    "PostToolUse": [{"matcher": "Bash", "hooks": [stale]} for _ in range(3)]
                    + [{"matcher": "Write", "hooks": [OTHER]}],
                    "Stop": [{"hooks": [stale, OTHER]}],
                }
            }
        )
    )
    assert main(["hook", "install", "claude-code", "--project", "--dir", str(tmp_path), "--json"]) == 0
    data = settings(target)
    (handler,) = ours(data, "PostToolUse")
    assert handler["async"] is True and "/old/bin" not in handler["command"]
    assert {"matcher": "Write", "hooks": [OTHER]} in data["hooks"]["PostToolUse"]
    assert {"hooks": [OTHER]} in data["hooks"]["Stop"] and len(ours(data, "Stop")) == 1
    assert main(["hook", "install", "claude-code", "--project", "--dir", str(tmp_path), "--json"]) == 0
    assert settings(target) == data


def test_codex_install_prints_a_config_toml_fragment_that_parses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hook", "install", "codex", "--project", "--dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    fragment = printed[printed.index("\n[features]\n") :].strip()  # the table header on a line of its own
    assert tomllib.loads(fragment) == {"features": {"hooks": True, "codex_hooks": True}}
    assert str(tmp_path / ".codex" / "config.toml") in printed
    assert main(["hook", "install", "codex", "--project", "--dir", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert tomllib.loads(out["config_toml"])["features"]["hooks"] is True
    assert out["config_file"] == str(tmp_path / ".codex" / "config.toml")


def test_a_command_that_merely_looks_like_ours_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / ".claude" / "settings.json"
    target.parent.mkdir()
    theirs = [
        {"type": "command", "command": "echo sherpa-skills hook claude-code"},
        {"type": "command", "command": "sherpa-skills hook claude-code && rm -rf build"},
        {"type": "command", "command": "sherpa-skills hook codex"},
        {"type": "command", "command": "sherpa-skills hook claude-code 'unbalanced"},
    ]
    original = {"hooks": {"Stop": [{"hooks": theirs}]}}
    target.write_text(json.dumps(original))
    assert main(["hook", "uninstall", "claude-code", "--project", "--dir", str(tmp_path), "--json"]) == 0
    assert settings(target) == original
