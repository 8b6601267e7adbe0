"""Writes the reference pages in docs/reference/ from the code itself: the YAML files' models, the CLI's parser, the
public Python API. The pages are committed; tests/docs/test_reference.py fails when they are out of date.

    python docs/reference/generate.py            # rewrite the pages beside this script
    python docs/reference/generate.py --out DIR  # write them into DIR instead

Deterministic: sorted where the order means nothing, no paths, addresses or times of the machine that runs it.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
COMMAND = "python docs/reference/generate.py"
NOTICE = f"<!-- Written by `{COMMAND}` from the code: edit the code, then run it again. -->\n"

if str(ROOT) not in sys.path:  # run as a script from a checkout: document this checkout's code, installed or not
    sys.path.insert(0, str(ROOT))

from pydantic import BaseModel  # noqa: E402
from pydantic.fields import FieldInfo  # noqa: E402
from pydantic_core import PydanticUndefined  # noqa: E402

# ---------------------------------------------------------------- Markdown helpers


def cell(text: str) -> str:
    """One table cell: a single line; `|` escaped outside code spans (Python-Markdown skips pipes inside them), `<`
    as an entity outside them, so no text reads as HTML."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    return "".join(p if p.startswith("`") else p.replace("|", "\\|").replace("<", "&lt;") for p in parts) or "—"


def prose(text: str) -> str:
    """Running text: `<` as an entity outside code spans, so no docstring reads as HTML."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;") for p in parts)


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading (its default slugify, on the text without markup)."""
    text = re.sub(r"[`*]", "", heading)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


def first_paragraph(doc: str | None) -> str:
    text = inspect.cleandoc(doc or "")
    return prose(" ".join(text.split("\n\n", 1)[0].split()))


def no_addresses(text: str) -> str:
    """Reprs that would differ from run to run: `<object object at 0x7f…>`."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


# ---------------------------------------------------------------- YAML files: their pydantic models

SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


@dataclasses.dataclass
class ModelPage:
    """Where each model of a page is described: one section each, under the YAML path where it is first met (or a
    title given for it), so a model met again is a link to that section."""

    titles: dict[type[BaseModel], str] = dataclasses.field(default_factory=dict)
    order: list[tuple[type[BaseModel], str]] = dataclasses.field(default_factory=list)
    #: Models described in sections of their own, written apart (they are not walked into).
    apart: set[type[BaseModel]] = dataclasses.field(default_factory=set)

    def name(self, model: type[BaseModel], title: str, apart: bool = False) -> None:
        if slug(title) in {slug(t) for t in self.titles.values()}:
            raise ValueError(f"two sections would have the anchor #{slug(title)}: give {model.__name__} a title")
        self.titles[model] = title
        if apart:
            self.apart.add(model)

    def reach(self, model: type[BaseModel], path: str) -> None:
        if model in self.apart or any(m is model for m, _ in self.order):
            return
        if model not in self.titles:
            self.name(model, path)
        self.order.append((model, self.titles[model]))
        for field, info in model.model_fields.items():
            for inner, suffix in nested_models(info.annotation):
                self.reach(inner, f"{path}.{field}{suffix}" if path else f"{field}{suffix}")

    def link(self, model: type[BaseModel]) -> str:
        title = self.titles[model]
        return f"[{code(title) if '.' in title or '[' in title else title}](#{slug(title)})"


def nested_models(annotation: Any) -> list[tuple[type[BaseModel], str]]:
    """The models inside a field's type, each with what its YAML path adds (`.NAME` in a mapping, `[]` in a list)."""
    found: list[tuple[type[BaseModel], str]] = []

    def walk(tp: Any, suffix: str) -> None:
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            found.append((tp, suffix))
        elif origin is typing.Annotated:
            walk(args[0], suffix)
        elif origin is dict:
            walk(args[1], suffix + ".NAME")
        elif origin is list:
            walk(args[0], suffix + "[]")
        elif origin in (typing.Union, types.UnionType):
            for arg in args:
                walk(arg, suffix)

    walk(annotation, "")
    return found


def bounds(metadata: Iterable[Any]) -> list[str]:
    """Constraints pydantic keeps as metadata (Ge, Le, a pattern), as short text."""
    out: list[str] = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            out += bounds(item.metadata)
            continue
        for attr, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            value = getattr(item, attr, None)
            if value is not None:
                out.append(f"{sign} {value}")
        pattern = getattr(item, "pattern", None)
        if pattern:
            out.append(f"matching {code(pattern)}")
    return out


def type_text(tp: Any, page: ModelPage | None) -> str:
    """A field's type in words a YAML writer reads: `string`, `list of` …, models as links to their section."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return "any"
    if tp in SCALARS:
        return SCALARS[tp]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if page is not None and tp in page.titles:
            return page.link(tp)
        return tp.__name__
    if origin is typing.Annotated:
        inner = type_text(args[0], page)
        extra = bounds(args[1:])
        return f"{inner} ({', '.join(extra)})" if extra else inner
    if origin is typing.Literal:
        return "one of " + ", ".join(code(json.dumps(a)) for a in args)
    if origin is list:
        return f"list of {type_text(args[0], page)}" if args else "list"
    if origin is dict:
        return f"mapping of name to {type_text(args[1], page)}" if args and args[1] is not Any else "mapping"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_text(a, page) for a in args)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(code(json.dumps(m.value)) for m in tp)
    return code(no_addresses(getattr(tp, "__name__", repr(tp))))


def default_text(info: FieldInfo) -> str:
    factory = info.default_factory
    if factory is not None:
        if isinstance(factory, type) and issubclass(factory, BaseModel):
            return "its own defaults"
        if factory in (list, dict):
            return code(json.dumps(factory()))
        return "a new one each time"  # an id, a timestamp: never called here, so the page stays the same
    if info.default is PydanticUndefined:
        return "**required**"
    return code(no_addresses(json.dumps(info.default, default=repr)))


def one_or_many(model: type[BaseModel]) -> set[str]:
    """Fields a `_one_or_many` validator lets be written as one item instead of a list."""
    fields: set[str] = set()
    for name, decorator in model.__pydantic_decorators__.field_validators.items():
        if name == "_one_or_many":
            fields.update(decorator.info.fields)
    return fields


def model_rows(model: type[BaseModel], page: ModelPage | None) -> list[list[str]]:
    singles = one_or_many(model)
    rows = []
    for name, info in model.model_fields.items():
        kind = type_text(info.annotation, page)
        extra = bounds(info.metadata)
        if extra:
            kind += f" ({', '.join(extra)})"
        if name in singles:
            kind += " (one item or a list)"
        rows.append([code(name), kind, default_text(info), info.description or ""])
    return rows


def model_sections(model: type[BaseModel], title: str, page: ModelPage) -> str:
    """The sections describing `model` (under `title`) and every model under it, each under its YAML path."""
    first = len(page.order)
    if model not in page.titles:
        page.name(model, title)
    page.reach(model, "")
    text = ""
    for inner, heading in page.order[first:]:
        text += f"{'##' if inner is model else '###'} {heading}\n\n"
        text += model_doc(inner)
        text += table(["Key", "Type", "Default", "Description"], model_rows(inner, page)) + "\n"
    return text


def model_doc(model: type[BaseModel]) -> str:
    doc = first_paragraph(model.__doc__) if model.__doc__ and model.__doc__ != BaseModel.__doc__ else ""
    return doc + "\n\n" if doc else ""


def workflow_page() -> str:
    from sherpa_skills.agents.team import TeamSpec
    from sherpa_skills.engine.registry import default_registry, load_builtins
    from sherpa_skills.engine.spec import ActionCall, GuardCall, RuleSpec, WorkflowSpec
    from sherpa_skills.heartbeat.config import HomeConfig

    load_builtins()
    page = ModelPage()
    page.name(RuleSpec, "Rules file", apart=True)
    page.name(GuardCall, "Guard call", apart=True)
    page.name(ActionCall, "Action call", apart=True)
    text = "# YAML reference\n\n" + NOTICE + "\n"
    text += (
        "Every file is checked when it loads: an unknown key, a wrong type or a value out of range is an error "
        "naming the file and line (`sherpa-skills validate FILE` shows them all). Keys written `NAME` are names you "
        "choose; `[]` marks the items of a list.\n\n"
        "- [Workflow file](#workflow-file)\n- [Rules file](#rules-file)\n"
        "- [Guard call](#guard-call) and [action call](#action-call): how a workflow names them\n"
        "- [Guards](#guards) and [actions](#actions) built in\n"
        "- [Team file](#team-file) (several agents)\n- [Home config.yaml](#home-configyaml)\n\n"
    )
    text += model_sections(WorkflowSpec, "Workflow file", page)
    text += "## Rules file\n\n"
    text += (
        f"{first_paragraph(RuleSpec.__doc__)} The file named by `policy.rules` holds `rules:` and a list (or the "
        "list alone); the same list can be written inline as `policy.rules`. Rules are tried in order: the first "
        "whose state pattern matches, whose guards all pass and whose trigger is available fires "
        "(`examples/support_triage/triage.rules.yaml` is one such file).\n\n"
    )
    text += table(["Key", "Type", "Default", "Description"], model_rows(RuleSpec, page)) + "\n"
    text += "## Guard call\n\n" + model_doc(GuardCall)
    text += (
        "Written as its name (`context_true`), as `{NAME: {ARG: VALUE}}`, or as `{guard: NAME, args: {...}}`; where "
        "a list of guards is taken, one guard alone may stand for it.\n\n"
    )
    text += table(["Key", "Type", "Default", "Description"], model_rows(GuardCall, page)) + "\n"
    text += "## Action call\n\n" + model_doc(ActionCall)
    text += (
        "Written as its name (`notify`), as `{NAME: {ARG: VALUE}}` (with `save_as` beside it), or as "
        "`{action: NAME, args: {...}}`; where a list of actions is taken, one action alone may stand for it.\n\n"
    )
    text += table(["Key", "Type", "Default", "Description"], model_rows(ActionCall, page)) + "\n"
    text += "## Guards\n\nBuilt in; `@sherpa_skills.guard` registers your own (in a module named in `imports`).\n\n"
    for name in sorted(default_registry.guard_names()):
        guard = default_registry.find_guard(name)
        assert guard is not None
        text += callable_section(name, guard.description, guard.args_model)
    text += (
        "## Actions\n\nBuilt in; `@sherpa_skills.action` registers your own. Named in `on_enter`, `on_exit`, "
        "`before` and `after`.\n\n"
    )
    for name in sorted(default_registry.action_names()):
        act = default_registry.find_action(name)
        assert act is not None
        text += callable_section(name, act.description, act.args_model)
    text += model_sections(TeamSpec, "Team file", page)
    text += model_sections(HomeConfig, "Home config.yaml", page)
    return text


def callable_section(name: str, description: str, args: type[BaseModel]) -> str:
    text = f"### {name}\n\n{prose(' '.join(description.split()))}\n\n"
    if args.model_config.get("extra") == "allow":
        rows = model_rows(args, None)
        text += "Takes any arguments" + (":" if rows else ".") + "\n\n"
        return text + (table(["Argument", "Type", "Default", "Description"], rows) + "\n" if rows else "")
    rows = model_rows(args, None)
    if not rows:
        return text + "Takes no arguments.\n\n"
    return text + table(["Argument", "Type", "Default", "Description"], rows) + "\n"


# ---------------------------------------------------------------- the CLI: its argparse parser


def option_name(action: argparse.Action) -> str:
    if not action.option_strings:
        name = action.metavar or action.dest
        return code(name.upper() if isinstance(name, str) else " ".join(name))
    value = ""
    if action.nargs != 0:
        metavar = action.metavar or (
            action.dest.upper() if not action.choices else "{" + ",".join(action.choices) + "}"
        )
        value = f" {metavar}" if isinstance(metavar, str) else " " + " ".join(metavar)
    return ", ".join(code(s + value) for s in sorted(action.option_strings, key=lambda s: (-len(s), s)))


def positional(action: argparse.Action) -> str:
    name = str(action.metavar or action.dest).upper()
    if action.nargs == "?":
        return f"[{name}]"
    return f"{name}..." if action.nargs in ("+", "*") else name


def option_default(action: argparse.Action) -> str:
    default = action.default
    if default in (None, argparse.SUPPRESS, False, []) or action.nargs == 0 or isinstance(default, bool):
        return ""
    return code(str(default))


def option_help(action: argparse.Action) -> str:
    text = action.help or ""
    if text == argparse.SUPPRESS:
        return ""
    if "%(" in text:
        text = text % {**vars(action), "prog": "sherpa-skills"}
    notes = []
    if action.choices:
        notes.append("one of " + ", ".join(code(str(c)) for c in action.choices))
    if isinstance(action, argparse._AppendAction):
        notes.append("repeatable")
    if action.required and action.option_strings:
        notes.append("required")
    if action.nargs in ("+", "*"):
        notes.append("one or more" if action.nargs == "+" else "any number")
    elif action.nargs == "?" and not action.option_strings:
        notes.append("optional")
    extra = [n for n in notes if n not in text]
    return "; ".join([t for t in [text] if t] + extra)


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help or "" for c in action._choices_actions}
            for name, sub in action.choices.items():
                out.append((name, helps.get(name, ""), sub))
    return out


def command_section(path: str, summary: str, parser: argparse.ArgumentParser, depth: int) -> str:
    text = f"{'#' * min(depth + 1, 4)} {path}\n\n"
    description = parser.description or summary
    if description:
        text += prose(" ".join(description.split())) + "\n\n"
    subs = subcommands(parser)
    own = [
        a
        for a in parser._actions
        if not isinstance(a, (argparse._SubParsersAction, argparse._HelpAction))
        and not (depth > 0 and set(a.option_strings) & {"--home", "--database", "--verbose"})
    ]
    usage = path + "".join(" [OPTIONS]" for _ in own[:1] if any(a.option_strings for a in own))
    usage += "".join(f" {positional(a)}" for a in own if not a.option_strings)
    if subs:
        usage += " COMMAND"
    text += f"Usage: {code(usage)}\n\n"
    if own:
        text += table(
            ["Argument or option", "Default", "Description"],
            [[option_name(a), option_default(a), option_help(a)] for a in own],
        )
        text += "\n"
    if subs:
        text += table(
            ["Command", "What it does"],
            [[f"[{code(name)}](#{slug(f'{path} {name}')})", help] for name, help, _ in subs],
        )
        text += "\n"
    for name, help, sub in subs:
        text += command_section(f"{path} {name}", help, sub, depth + 1)
    return text


def cli_page() -> str:
    from sherpa_skills.cli.console import EXIT_CODES
    from sherpa_skills.cli.main import build_parser

    parser = build_parser()
    text = "# Command line reference\n\n" + NOTICE + "\n"
    text += (
        f"{parser.description} Every command takes `--home HOME`, `--database URL` and `-v` before or after its "
        "name (see [the options every command takes](#options-every-command-takes)); `sherpa-skills COMMAND --help` "
        "prints what this page shows for one command.\n\n"
    )
    text += "## Commands\n\n"
    text += table(
        ["Command", "What it does"],
        [[f"[{code(n)}](#{slug(f'sherpa-skills {n}')})", h] for n, h, _ in subcommands(parser)],
    )
    text += "\n## Exit codes\n\n"
    text += table(["Code", "Meaning"], [[code(str(c)), m] for c, m in EXIT_CODES])
    text += "\n"
    text += "## Options every command takes\n\n"
    top = [a for a in parser._actions if not isinstance(a, (argparse._SubParsersAction, argparse._HelpAction))]
    shared = [a for a in top if "--version" not in a.option_strings]
    rows = [[option_name(a), option_default(a), option_help(a)] for a in shared]
    text += table(["Option", "Default", "Description"], rows)
    text += (
        "\n`sherpa-skills --version` prints the installed version; `--help` after any command lists its options.\n\n"
    )
    for name, help, sub in subcommands(parser):
        text += command_section(f"sherpa-skills {name}", help, sub, 1)
    return text


# ---------------------------------------------------------------- the Python API

#: Import paths the docs name beyond `sherpa_skills.__all__` (the extension points and helpers they show).
DOCUMENTED_PATHS = (
    "sherpa_skills.engine.hooks.RunHook",
    "sherpa_skills.skills.capture.learning.Learner",
    "sherpa_skills.skills.replay.policy.ReplayPolicy",
    "sherpa_skills.engine.fork.fork_run",
    "sherpa_skills.heartbeat.phases.on_phase_start",
    "sherpa_skills.sessions.live.live_sessions",
    "sherpa_skills.skills.match.verifier.judge",
    "sherpa_skills.logs.configure",
)


class _Written:
    """An annotation as the source wrote it (the package postpones annotations, so they are strings): shown bare."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def signature(obj: Callable[..., Any], name: str) -> str:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return f"{name}(...)"

    def bare(annotation: Any) -> Any:
        return _Written(annotation) if isinstance(annotation, str) else annotation

    params = [p.replace(annotation=bare(p.annotation)) for p in sig.parameters.values()]
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    sig = sig.replace(parameters=params, return_annotation=bare(sig.return_annotation))
    return no_addresses(f"{name}{sig}").replace("typing.", "")


def members(cls: type) -> list[tuple[str, Any]]:
    """Public methods and properties `cls` and its own bases (the package's, not pydantic's or Python's) define."""
    seen: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith("sherpa_skills"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name.startswith("model_"):
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if inspect.isfunction(value) or isinstance(value, property):
                seen[name] = value
    return sorted(seen.items())


def api_entry(path: str, obj: Any, heading: str) -> str:
    """One name's section. No fenced blocks: every fenced block of the docs is run by the docs tests, and a
    signature is not a program."""
    module, _, name = path.rpartition(".")
    text = f"### {heading}\n\n{code(f'from {module} import {name}')}\n\n"
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        text += f"An exception: a kind of {code(obj.__bases__[0].__name__)}.\n\n"
    elif inspect.isclass(obj) and issubclass(obj, BaseModel):
        text += "A pydantic model (its fields below).\n\n"
    elif inspect.isclass(obj):
        if "__init__" in vars(obj) or dataclasses.is_dataclass(obj):
            text += code(signature(obj, name).removesuffix(" -> None")) + "\n\n"
    elif inspect.isfunction(obj) or inspect.ismethod(obj):
        text += code(signature(obj, name)) + "\n\n"
    else:
        text += f"An instance of {code(type(obj).__name__)}.\n\n"
    doc = first_paragraph(obj.__doc__ if inspect.isclass(obj) or callable(obj) else type(obj).__doc__)
    if doc and not (inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__doc__ == BaseModel.__doc__):
        text += doc + "\n\n"
    if inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.model_fields:
        text += table(["Field", "Type", "Default", "Description"], model_rows(obj, None)) + "\n"
    if inspect.isclass(obj) and not issubclass(obj, BaseException):
        rows = []
        for member, value in members(obj):
            if isinstance(value, property):
                rows.append([code(member), first_paragraph(value.__doc__)])
            else:
                rows.append([code(signature(value, member)), first_paragraph(value.__doc__)])
        if rows:
            text += table(["Method or property", "What it does"], rows) + "\n"
    return text


def api_page() -> str:
    import sherpa_skills

    text = "# Python API reference\n\n" + NOTICE + "\n"
    text += (
        f"{first_paragraph(sherpa_skills.__doc__)} Everything below `sherpa_skills` itself is importable from the "
        "package (`from sherpa_skills import load_workflow`); each name loads on first use, so `import "
        "sherpa_skills` stays fast. The [other import paths](#other-documented-import-paths) are the extension "
        "points and helpers the guides name.\n\n"
    )
    text += "## sherpa_skills\n\n"
    for name in sorted(sherpa_skills.__all__):
        obj = getattr(sherpa_skills, name)
        text += api_entry(f"sherpa_skills.{name}", obj, name)
    text += "## Other documented import paths\n\n"
    for path in DOCUMENTED_PATHS:
        module, _, name = path.rpartition(".")
        text += api_entry(path, getattr(importlib.import_module(module), name), path)
    return text


def index_page() -> str:
    return (
        "# Reference\n\n" + NOTICE + "\n"
        "Written from the code, so it says what this version does:\n\n"
        "- [YAML reference](workflow-yaml.md): every key of a workflow file, a rules file, a team file and the "
        "home's `config.yaml`, with the built-in guards and actions.\n"
        "- [Command line reference](cli.md): every `sherpa-skills` command and option, and the exit codes.\n"
        "- [Python API reference](python-api.md): what `sherpa_skills` exports, and the other documented import "
        "paths.\n"
    )


def pages() -> dict[str, str]:
    """File name → Markdown, for every page this script writes."""
    made = {
        "index.md": index_page(),
        "workflow-yaml.md": workflow_page(),
        "cli.md": cli_page(),
        "python-api.md": api_page(),
    }
    return {name: re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n" for name, text in made.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/reference/*.md from the code.")
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write into (default: beside this script)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        (args.out / name).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
