"""`hook install` / `hook uninstall`: merged into the agent's settings, a backup first, idempotent, exactly undone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sherpa_skills.cli.main import main

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
