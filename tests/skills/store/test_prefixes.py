"""Id prefixes name one run or procedure literally: `%` and `_` are characters, and an ambiguous prefix is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from sherpa_skills.cli import main
from sherpa_skills.engine.runstore import RunStore, TickRecord
from sherpa_skills.errors import StoreError
from sherpa_skills.skills.replay.runtime import skill_store
from sherpa_skills.skills.store.models import CapturedProcedure, ProcedureStep


def add_run(home: Path, run_id: str) -> None:
    store = RunStore(home=home)
    store.create_run(run_id, "flow", None, None, {}, "start", {}, TickRecord())
    store.close()


def add_procedure(home: Path) -> str:
    return (
        skill_store(home)
        .add_procedure(
            CapturedProcedure(
                id="",
                task_type="build",
                steps=[ProcedureStep(command="make"), ProcedureStep(command="make test")],
                source="manual",
            )
        )
        .id
    )


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


class TestRuns:
    @pytest.mark.parametrize("prefix", ["%", "_", "_%", "%a", ""])
    def test_like_wildcards_match_nothing(self, home: Path, prefix: str) -> None:
        add_run(home, "abc123def456")
        store = RunStore(home=home)
        with pytest.raises(StoreError):
            store.get_run(prefix)

    def test_a_unique_prefix_still_finds_the_run(self, home: Path) -> None:
        add_run(home, "abc123def456")
        assert RunStore(home=home).get_run("abc1").run_id == "abc123def456"

    def test_an_ambiguous_prefix_is_refused_naming_the_candidates(self, home: Path) -> None:
        add_run(home, "abc123def456")
        add_run(home, "abc999def456")
        with pytest.raises(StoreError, match="ambiguous.*abc123def456.*abc999def456"):
            RunStore(home=home).get_run("abc")

    def test_a_run_id_with_an_underscore_matches_only_itself(self, home: Path) -> None:
        add_run(home, "a_b")
        add_run(home, "axb-other")
        assert RunStore(home=home).get_run("a_").run_id == "a_b"

    def test_show_percent_from_the_cli_is_an_error(self, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
        add_run(home, "abc123def456")
        code, err = cli(capsys, "show", "%", "--home", str(home))
        assert code != 0 and "no run '%'" in err


class TestProcedures:
    @pytest.mark.parametrize(
        "argv", [["learn", "show", "%"], ["learn", "promote", "_%"], ["learn", "replay", "build", "--procedure", "%"]]
    )
    def test_wildcards_do_not_act_on_the_only_procedure(
        self, home: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
    ) -> None:
        pid = add_procedure(home)
        code, err = cli(capsys, *argv, "--home", str(home))
        assert code != 0 and "no procedure" in err
        assert skill_store(home).get(pid).status == "active"

    def test_a_unique_prefix_still_finds_the_procedure(self, home: Path) -> None:
        pid = add_procedure(home)
        assert skill_store(home).get(pid[:4]).id == pid

    def test_an_ambiguous_procedure_prefix_is_refused(self, home: Path) -> None:
        store = skill_store(home)
        first = add_procedure(home)
        store.add_procedure(
            CapturedProcedure(
                id=first[:3] + "zzzzzz",
                task_type="other",
                steps=[ProcedureStep(command="npm ci"), ProcedureStep(command="npm test")],
                source="manual",
            )
        )
        with pytest.raises(StoreError, match="ambiguous"):
            store.get(first[:3])
