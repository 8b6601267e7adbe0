"""Per-run, per-agent and per-team JSON log files: whatever the name, the file lands in HOME/logs and nowhere else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.engine.runstore import RunStore
from sherpa_skills.engine.workflow import load_workflow
from sherpa_skills.logs import log_file

_BASES = [
    "../../etc/passwd",
    "/etc/passwd",
    "..",
    ".",
    "",
    "../",
    "/",
    "a/b",
    "a\\b",
    "..\\..\\windows",
    "~",
    "~root/x",
    "x\x00y",
    "\x00",
    "a\nb",
    " ",
    "-rf",
    ".hidden",
    "$(touch pwned)",
    "*",
    "%2e%2e%2fetc",
    "con",
    "名前/..",
    "💥" * 70,
    "a" * 300,
    "é" * 200,
    "\udcff",
    "x" * 254 + "/",
    ".." + "/.." * 40,
    "logs/../../store.db",
    "nul\x00/../../x",
    "-",
    "--help",
    "a:b",
    "a|b",
    "a;b",
]
#: 99 tries: each base alone, as a prefix and as a suffix of a plain word.
HOSTILE_NAMES = (_BASES + [f"agent-{b}" for b in _BASES] + [f"{b}.task" for b in _BASES])[:99]


def _files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


class TestLogFile:
    @pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
    def test_every_name_maps_to_one_writable_file_inside_home_logs(self, tmp_path: Path, home: Path, name: str) -> None:
        """A name with slashes, dots, NUL, newlines, unicode or 300 characters is encoded, not used as a path."""
        path = log_file(home, name)
        assert path.parent == home / "logs"
        assert path.name.endswith(".jsonl") and not path.name.startswith(".")
        assert len(path.name.encode("utf-8")) <= 255
        path.open("a", encoding="utf-8").write("{}\n")
        assert path.resolve().parent == (home / "logs").resolve()
        assert _files_under(tmp_path) == {home, home / "logs", path}

    def test_plain_names_stay_readable_and_different_names_never_share_a_file(self, tmp_path: Path) -> None:
        """A run id or agent name of letters, digits, '.', '_' and '-' is the file name; encoded ones stay distinct."""
        assert log_file(tmp_path, "a1b2c3d4e5f6").name == "a1b2c3d4e5f6.jsonl"
        assert log_file(tmp_path, "agent-critic.task_1").name == "agent-critic.task_1.jsonl"
        names = {log_file(tmp_path, n).name for n in ["a/b", "a_b", "a\\b", "a b", "a\x00b"]}
        assert len(names) == 5


TEAM = """
name: {name}
agents:
  solo:
    workflow: solo.yaml
    subscribe: [go]
initial_event: {{name: go, topic: go}}
"""

SOLO = """
name: {name}
initial: ready
states:
  ready:
    waiting: true
    transitions: [{{trigger: go, dest: done}}]
  done: {{final: true}}
"""


class TestNamesThroughTheCli:
    @pytest.mark.parametrize("name", ["../../../outside", "/tmp/abs", "..", "a" * 300, "x\ty/../../z"])
    def test_team_and_workflow_names_never_write_outside_home(
        self, tmp_path: Path, home: Path, capsys, name: str
    ) -> None:
        """`run TEAM.yaml` logs to HOME/logs/team-NAME.jsonl: a hostile team or workflow name is encoded, no
        traceback."""
        work = tmp_path / "work" / "deep" / "er"
        work.mkdir(parents=True)
        quoted = json.dumps(name)
        (work / "solo.yaml").write_text(SOLO.format(name=quoted))
        (work / "team.yaml").write_text(TEAM.format(name=quoted))
        before = _files_under(tmp_path)
        code = main(["run", str(work / "team.yaml"), "--home", str(home), "--json"])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        assert code == 0, err
        assert json.loads(out)["status"] == "done"
        new = _files_under(tmp_path) - before
        assert new and all(p == home or home in p.parents for p in new)
        assert len(list((home / "logs").glob("team-*.jsonl"))) == 1

    @pytest.mark.parametrize("run_id", ["../../../outside", "/tmp/abs-run", "..", "r" * 300])
    def test_resuming_a_run_whose_id_is_a_path_logs_inside_home(self, tmp_path: Path, capsys, run_id: str) -> None:
        """A run started from Python with a path-like id, resumed by `sherpa-skills resume`, still logs in HOME/logs."""
        home = tmp_path / "a" / "b" / "home"
        flow = tmp_path / "solo.yaml"
        flow.write_text(SOLO.format(name="solo"))
        store = RunStore(home=home)
        agent = load_workflow(str(flow)).agent(store=store, run_id=run_id)
        assert agent.run().status == "waiting"
        store.close()
        before = _files_under(tmp_path)
        code = main(["resume", run_id, "--home", str(home), "--trigger", "go", "--json"])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        assert code == 0, err
        assert json.loads(out)["status"] == "final"
        new = {p for p in _files_under(tmp_path) - before if not p.name.startswith("store.db")}
        assert new and all(p == home / "logs" or home / "logs" in p.parents for p in new), new
        assert not Path("/tmp/abs-run.jsonl").exists()
        assert not any(p.name == "outside.jsonl" for p in tmp_path.rglob("*"))


def test_no_hostile_name_left_anything_in_the_working_directory() -> None:
    """The tries above write into temporary homes only; nothing named after them appears where the tests run."""
    assert not any(Path(os.getcwd(), n).exists() for n in ("outside.jsonl", "pwned"))
