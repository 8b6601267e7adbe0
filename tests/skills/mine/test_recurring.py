"""Mining what people do again and again: commands read with a shell tokenizer, recurring sequences anti-unified."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count

import pytest

from sherpa_skills.skills.mine.recurring import RecurringOptions, find
from sherpa_skills.skills.mine.shell_words import classify

_ids = count(1)
DAY = 86400.0


@dataclass
class Cmd:
    """A session command as the session store hands it to mining (the fields mining reads)."""

    command: str
    session_id: str = "s1"
    timestamp: float | None = None
    outcome: str = "success"
    source: str = "claude-code"
    cwd: str | None = "/work/app"
    agent: str | None = None
    seq: int = 0
    id: int = field(default_factory=lambda: next(_ids))


def session(name: str, commands: list[str], start: float = 1_700_000_000.0, source: str = "claude-code") -> list[Cmd]:
    return [Cmd(c, session_id=name, timestamp=start + 10 * i, seq=i, source=source) for i, c in enumerate(commands)]


class TestClassify:
    @pytest.mark.parametrize(
        "command",
        [
            "rg -n \"foo|bar\" src | sed -n '1,20p'",
            "nl -ba src/app.py | sed -n 40,80p",
            "strings bin/app | grep -i version",
            "find . -name '*.py' | xargs wc -l | sort -n" if False else "find . -name '*.py' | sort",
            "git status",
            "git log --oneline -5",
            "jq '.items[]' data.json",
            "cat README.md",
            "ls -la",
            "git diff HEAD~1",
            "docker ps -a",
            "kubectl get pods",
        ],
    )
    def test_look_around(self, command: str) -> None:
        assert classify(command) == "look"

    @pytest.mark.parametrize(
        "command",
        [
            "sed -i 's/a/b/' f.txt",
            "grep x a.txt > hits.txt",
            "cat a | tee b",
            "find . -name '*.pyc' -delete",
            "git commit -am 'fix | pipe'",
            "npm run build",
            "make -C tests",
            "git push origin main",
            "echo x >> .gitignore",
        ],
    )
    def test_work(self, command: str) -> None:
        assert classify(command) == "work"

    @pytest.mark.parametrize(
        "command,kind",
        [
            ("vim notes.txt", "interactive"),
            ("python3", "interactive"),
            ("python3 manage.py migrate", "work"),
            ("less log", "interactive"),
            ("fg", "job"),
            ("\\fg", "job"),
            ("kill -9 9383", "job"),
            ("[A", "noise"),
            ("# a comment", "noise"),
            ("::::", "noise"),
            ("echo 'unterminated", "noise"),
            ("pnpm dev", "long_running"),
            ("npm run dev -- --port 3001", "long_running"),
            ("python -m http.server 8000", "long_running"),
            ("./server &", "long_running"),
            ("cd src", "cd"),
            ("export PATH=$(pwd):$PATH", "env"),
            ("cat > f.txt <<'EOF'\nhello\nEOF", "work"),
        ],
    )
    def test_other_kinds(self, command: str, kind: str) -> None:
        assert classify(command) == kind


class TestRecurring:
    def test_a_routine_seen_in_two_sessions_becomes_a_parameterised_candidate(self) -> None:
        """What differs between the occurrences (the message, the branch) becomes a parameter; what agrees stays."""
        one = session("a", ["git status", "git add -A", "git commit -m 'fix parser'", "git push origin fix-parser"])
        two = session("b", ["git add -A", "git commit -m 'update docs'", "git push origin docs"], start=1_700_100_000.0)
        (candidate,) = find(one + two)
        assert candidate.steps == ["git add -A", "git commit -m {{ message }}", "git push origin {{ branch }}"]
        assert candidate.parameters == {"message": ["fix parser", "update docs"], "branch": ["fix-parser", "docs"]}
        assert (candidate.support, candidate.sessions) == (2, ["a", "b"])
        assert candidate.task_type == "git-add-commit-push"

    def test_a_sequence_seen_once_is_not_a_candidate(self) -> None:
        assert find(session("a", ["npm ci", "npm run build", "npm test"])) == []

    def test_exploration_and_one_off_file_writes_give_nothing(self) -> None:
        """Read-only exploration repeated across sessions, and heredoc writes with their contents, are not routines."""
        looks = ["rg -n 'TODO' src | sed -n '1,20p'", "nl -ba src/a.py | sed -n 1,40p", "git status", "ls -la"]
        writes = [
            "cat > a.ts <<'EOF'\nexport const a = 1\nEOF",
            "cat > b.ts <<'EOF'\nexport const b = 2\nEOF",
            "npx tsc",
        ]
        commands = session("a", looks + writes) + session("b", looks, start=1_700_100_000.0)
        assert find(commands) == []

    def test_failed_and_retried_commands_keep_the_last_try(self) -> None:
        """Trial and error collapses to the variant that finally ran; failures never become steps."""
        one = session("a", ["npm install", "npm run biuld", "npm run build", "npm test"])
        one[1].outcome = "failure"
        two = session("b", ["npm install", "npm run build", "npm test"], start=1_700_100_000.0)
        (candidate,) = find(one + two)
        assert candidate.steps == ["npm install", "npm run build", "npm test"]

    def test_a_command_run_again_with_more_options_keeps_only_the_second(self) -> None:
        """`pytest tests` then `pytest tests -x --lf`: the first try did not do it; the routine is what ran last."""
        one = session("a", ["pip install -e .", "pytest tests", "pytest tests -x --lf", "git push"])
        two = session("b", ["pip install -e .", "pytest tests -x --lf", "git push"], start=1_700_100_000.0)
        (candidate,) = find(one + two)
        assert candidate.steps == ["pip install -e .", "pytest tests -x --lf", "git push"]

    def test_cd_between_steps_is_kept(self) -> None:
        """Each step runs in the directory the previous `cd` chose, so the `cd` is part of the routine."""
        one = session("a", ["cd frontend", "npm ci", "npm run build"])
        two = session("b", ["cd frontend", "npm ci", "npm run build"], start=1_700_100_000.0)
        (candidate,) = find(one + two)
        assert candidate.steps == ["cd frontend", "npm ci", "npm run build"]

    def test_batches_of_one_program_are_not_routines(self) -> None:
        one = session("a", ["cp a.txt b/", "cp c.txt d/", "mv x y"])
        two = session("b", ["cp e.txt f/", "cp g.txt h/", "mv z w"], start=1_700_100_000.0)
        assert find(one + two) == []

    def test_two_frequent_commands_that_happen_to_meet_are_not_a_routine(self) -> None:
        """`rm x; git add y` met twice among many of each: below the lift a routine needs."""
        noise = []
        for day in range(30):
            noise += session(
                f"d{day}",
                [f"rm tmp{day}.log", f"touch f{day}", f"git add f{day}", "git commit -m wip"],
                start=1_700_000_000 + day * DAY,
            )
        pairs = session("x", ["rm old.log", "git add new.py"], start=1_690_000_000.0) + session(
            "y", ["rm a.log", "git add b.py"], start=1_691_000_000.0
        )
        steps = [c.steps for c in find(noise + pairs)]
        assert ["rm {{ path }}", "git add {{ path2 }}"] not in steps

    def test_shell_history_days_are_units(self) -> None:
        """One history file is one session: its days are what a routine must recur across."""
        history = session("h", ["brew update", "brew upgrade"], source="zsh-history") + session(
            "h", ["brew update", "brew upgrade"], start=1_700_000_000.0 + 2 * DAY, source="zsh-history"
        )
        (candidate,) = find(history)
        assert candidate.steps == ["brew update", "brew upgrade"] and candidate.support == 2

    def test_the_same_day_twice_is_one_unit(self) -> None:
        history = session(
            "h", ["brew update", "brew upgrade", "ls", "brew update", "brew upgrade"], source="zsh-history"
        )
        assert find(history) == []

    def test_support_is_configurable(self) -> None:
        three = [session(n, ["make lint", "make test"], start=1_700_000_000.0 + i * DAY) for i, n in enumerate("abc")]
        commands = [c for s in three for c in s]
        assert len(find(commands, RecurringOptions(min_support=3))) == 1
        assert find(commands, RecurringOptions(min_support=4)) == []
