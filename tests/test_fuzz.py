"""Seeded fuzzing of everything a user hands us: workflow files, session logs, steps files.

Each mutant must end in a clear error naming the file (and line where there is one) or a counted skip: never a
traceback, never a crash. Real session logs are read from SHERPA_SKILLS_ACCEPTANCE_SESSIONS when it is set (`.ci/run`
sets it); without it the small logs the other tests write stand in.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from sherpa_skills.cli import main
from sherpa_skills.sessions import import_paths

ROOT = Path(__file__).resolve().parent.parent
SEED = 20261123
WORKFLOWS = sorted([*ROOT.glob("examples/*/*.yaml"), *ROOT.glob("statemachines/*.yaml")])


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, err


def assert_clear(code: int, err: str, path: Path) -> None:
    """Exit 2 with every line FILE:LINE: message or `sherpa-skills: ...` (or success); no traceback."""
    assert "Traceback" not in err, err
    if code == 0:
        return
    assert code in (1, 2), (code, err)
    for line in err.strip().splitlines():
        if line.startswith(f"{path}:") or line.startswith(f"{path.resolve()}:"):
            number = (
                line.split(":", 2)[1]
                if not line.startswith(f"{path.resolve()}:")
                else line[len(f"{path.resolve()}:") :].split(":", 1)[0]
            )
            assert number.isdigit(), line
        elif not line.startswith("sherpa-skills: "):
            # structlog lines of a run that failed cleanly are fine; anything else is not
            assert "run_failed" in line or "[" in line, line


# ---------------------------------------------------------------- workflow files


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    kind = rng.choice(
        ["flip", "flip", "insert_high", "truncate", "delete_line", "duplicate_line", "swap_lines", "nul", "indent"]
    )
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
    elif kind == "insert_high":
        i = rng.randrange(len(out))
        out[i:i] = bytes([rng.choice([0x80, 0xC3, 0xE2, 0xF0, 0xFF, 0xFE, 0xED])])
    elif kind == "truncate":
        del out[rng.randrange(len(out)) :]
    elif kind == "nul":
        out[rng.randrange(len(out))] = 0
    else:
        lines = bytes(out).split(b"\n")
        i = rng.randrange(len(lines))
        if kind == "delete_line":
            del lines[i]
        elif kind == "duplicate_line":
            lines.insert(i, lines[i])
        elif kind == "swap_lines":
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines[i] = b"  " + lines[i]
        out = bytearray(b"\n".join(lines))
    return bytes(out)


@pytest.mark.slow
def test_mutated_workflow_files_give_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """210 mutants of the shipped workflows through `validate`; those it refuses through `run` too."""
    rng = random.Random(SEED)
    refused = 0
    for n in range(210):
        original = WORKFLOWS[n % len(WORKFLOWS)]
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        for sibling in original.parent.iterdir():  # rules files, scripts and modules beside it
            if sibling.is_file():
                (folder / sibling.name).write_bytes(sibling.read_bytes())
        path = folder / original.name
        path.write_bytes(mutate_bytes(original.read_bytes(), rng))
        code, err = cli(capsys, "validate", str(path))
        assert_clear(code, err, path)
        if code != 0:
            refused += 1
            code, err = cli(capsys, "run", str(path), "--home", str(tmp_path / "home"))
            assert code == 2, err
            assert_clear(code, err, path)
    assert refused > 50


# ---------------------------------------------------------------- session logs


def session_logs(tmp_path: Path) -> list[Path]:
    folder = os.environ.get("SHERPA_SKILLS_ACCEPTANCE_SESSIONS")
    if folder and Path(folder).is_dir():
        return sorted(
            p
            for p in Path(folder).rglob("*")
            if p.is_file() and p.suffix in (".jsonl", "") and p.stat().st_size < 2_000_000 and "history" not in p.name
        )
    print("SHERPA_SKILLS_ACCEPTANCE_SESSIONS not set: fuzzing small generated logs instead")
    from test_sessions_claude_code import bash, result, write

    return [
        write(
            tmp_path / "seed" / "-work-app" / "11111111-2222-4333-8444-555555555555.jsonl",
            *[
                x
                for i, c in enumerate(["git status", "make", "make test", "ls"])
                for x in (
                    bash(f"t{i}", c, uuid=f"a{i}"),
                    result(f"t{i}", "ok" if i % 2 else "Exit code 1", uuid=f"b{i}", is_error=bool(i % 2)),
                )
            ],
        )
    ]


def _wrong_type(rng: random.Random) -> Any:
    return rng.choice([None, 7, -1, 1.5, True, "", "x" * 50, [], [1, "a"], {}, {"a": {"b": []}}, 10**40])


def mutate_entry(entry: Any, rng: random.Random) -> Any:
    """Replace one value somewhere in a JSON entry with a value of the wrong type, or with deep nesting."""
    if not isinstance(entry, (dict, list)) or not entry:
        return _wrong_type(rng)
    keys = list(entry.keys()) if isinstance(entry, dict) else list(range(len(entry)))
    key = rng.choice(keys)
    if rng.random() < 0.5 and isinstance(entry[key], (dict, list)) and entry[key]:
        entry[key] = mutate_entry(entry[key], rng)
    else:
        entry[key] = _wrong_type(rng) if rng.random() < 0.85 else "DEEP"  # replaced by deep nesting once serialised
    return entry


def mutate_log(lines: list[str], rng: random.Random) -> str:
    out = list(lines)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(out))
        kind = rng.choice(["type", "type", "type", "deep", "flip", "cut", "not_json", "scalar"])
        if kind in ("type", "deep"):
            try:
                entry = json.loads(out[i])
            except (ValueError, RecursionError):
                continue
            text = json.dumps(mutate_entry(entry, rng))
            deep = "[" * 100_000 + "]" * 100_000
            if "DEEP" in text:
                text = text.replace('"DEEP"', deep)
            elif kind == "deep":
                text = deep
            out[i] = text
        elif kind == "flip" and out[i]:
            j = rng.randrange(len(out[i]))
            out[i] = out[i][:j] + chr(rng.choice([0, 0x7F, 0xFFFD, ord("{"), ord('"'), 0x10FFFF])) + out[i][j + 1 :]
        elif kind == "cut":
            out[i] = out[i][: rng.randrange(len(out[i]) + 1)]
        elif kind == "not_json":
            out[i] = "this is not json {"
        else:
            out[i] = rng.choice(["null", "1", '"text"', "[]", "true", "1e999", "-0"])
    return "\n".join(out) + "\n"


@pytest.mark.slow
def test_mutated_session_logs_are_imported_or_skipped_and_counted(tmp_path: Path, home: Path) -> None:
    """118 mutants of real session logs: broken lines are skipped and counted, the rest imported; nothing raises."""
    rng = random.Random(SEED + 1)
    logs = session_logs(tmp_path)
    for n in range(118):
        original = logs[n % len(logs)]
        lines = original.read_text(encoding="utf-8", errors="replace").splitlines()[:400]
        relative = original.parent.name
        path = tmp_path / "mutants" / str(n) / relative / original.name
        path.parent.mkdir(parents=True)
        text = mutate_log(lines, rng)
        if n % 10 == 9:
            path.write_bytes(text.encode("utf-8", "surrogatepass")[:-5] + b"\xff\xfe\n")
        else:
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        summary = import_paths([path], home=home)
        assert summary.files == 1 or summary.unrecognised_files + summary.unreadable_files == 1, summary


# ---------------------------------------------------------------- steps files

BILLION_LAUGHS = (
    "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    + "steps: *i\n"
)

STEPS_FILES: dict[str, str] = {
    "huge exit code": "- {command: make, expected_exit_code: " + "9" * 5000 + "}\n",
    "huge exit code in JSON": '[{"command": "make", "expected_exit_code": ' + "9" * 5000 + "}]",
    "invalid regex": "- {command: make, expected_output_pattern: '(unclosed'}\n",
    "invalid regex nested quantifier": "- {command: make, expected_output_pattern: 'a**'}\n",
    "deep nesting": "steps: " + "[" * 5000 + "]" * 5000 + "\n",
    "deep JSON nesting": '{"steps": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "billion laughs": BILLION_LAUGHS,
    "recursive alias": "steps: &s [*s]\n",
    "not UTF-8": '- {command: "caf\xe9"}\n',
    "empty": "",
    "scalar": "42\n",
    "wrong types": "- {command: [1, 2], timeout_secs: yes}\n",
    "negative timeout": "- {command: make, timeout_secs: -1}\n",
    "env values": "- {command: make, env_vars: ['TOKEN=abc']}\n",
    "unknown key": "- {command: make, colour: red}\n",
    "empty command": "- {command: ''}\n",
    "nul": '- {command: "a\x00b"}\n',
    "surrogate escape": '- {command: "\\ud800"}\n',
    "inf timeout": "- {command: make, timeout_secs: .inf}\n",
    "nan timeout": "- {command: make, timeout_secs: .nan}\n",
}


def _malformed_steps() -> list[tuple[str, bytes]]:
    cases = [
        (name, text.encode("latin-1") if name == "not UTF-8" else text.encode("utf-8", "surrogatepass"))
        for name, text in STEPS_FILES.items()
    ]
    rng = random.Random(SEED + 2)
    base = (
        b"description: build it\ntags: [make]\nsteps:\n  - {command: make, expected_exit_code: 0}\n  - {command: "
        b"make test, expected_output_pattern: 'passed'}\n"
    )
    cases += [(f"mutant {i}", mutate_bytes(base, rng)) for i in range(26)]
    return cases


@pytest.mark.parametrize("name, content", _malformed_steps(), ids=[c[0] for c in _malformed_steps()])
def test_malformed_steps_files_give_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes
) -> None:
    """46 malformed steps files through `learn capture-success --steps-file`: each a clear error or a capture."""
    path = tmp_path / "steps.yaml"
    path.write_bytes(content)
    code, err = cli(
        capsys, "learn", "capture-success", "build", "--steps-file", str(path), "--home", str(tmp_path / "home")
    )
    assert_clear(code, err, path)


@pytest.mark.parametrize(
    "name, words",
    [
        ("huge exit code", "integer of 5000 digits"),
        ("huge exit code in JSON", "integer of 5000 digits"),
        ("invalid regex", "not a valid regular expression"),
        ("invalid regex nested quantifier", "not a valid regular expression"),
        ("deep nesting", "nested more than"),
        ("deep JSON nesting", "nested more than"),
        ("billion laughs", "YAML bomb"),
        ("recursive alias", "recursive alias"),
        ("not UTF-8", "not UTF-8"),
        ("inf timeout", "timeout_secs"),
        ("nan timeout", "timeout_secs"),
        ("surrogate escape", "invalid YAML"),
    ],
)
def test_the_reported_steps_files_are_refused_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, words: str
) -> None:
    """The cases that crashed: each now exit 2 with FILE:LINE: and what is wrong."""
    path = tmp_path / "steps.yaml"
    path.write_bytes(dict(_malformed_steps())[name])
    code, err = cli(
        capsys, "learn", "capture-success", "build", "--steps-file", str(path), "--home", str(tmp_path / "home")
    )
    assert code == 2 and err.startswith(f"{path}:") and words in err, err
