"""What a run executed, kept with it: the machine's drawing and states, and the text of every file it loaded (the
workflow, its rules file, the LLM policy's prompts, the scripted model's script), once per spec hash.

The browser view draws a run from this record, not from the workflow file as it is now, and says when the file
changed or went away since.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..data import data_dir
from ..llm.call import SCRIPTED_PREFIX
from .compiler import CompiledMachine
from .diagram import to_mermaid

MAX_FILE_BYTES = 1_000_000  # a file larger than this is named, not copied: a workflow's files are small


def file_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _read(role: str, path: Path) -> dict[str, Any]:
    entry: dict[str, Any] = {"role": role, "path": str(path), "text": None, "digest": None, "problem": None}
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            entry["problem"] = f"{size} bytes: larger than {MAX_FILE_BYTES}, not kept"
            return entry
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        entry["problem"] = f"cannot read: {exc.strerror or exc}"
        return entry
    entry.update(text=text, digest=file_digest(text))
    return entry


def _in_folders(name: str, folders: list[Path]) -> Path | None:
    for folder in folders:
        path = folder / name
        if path.is_file():
            return path
    return None


def loaded_files(machine: CompiledMachine, workflow_path: str | None, model: str | None) -> list[dict[str, Any]]:
    """The files a run of `machine` reads: the workflow, a rules file, the LLM policy's prompt templates, the scripted
    model's script (found where the loader and the policy find them)."""
    spec = machine.spec
    base = Path(workflow_path).parent if workflow_path else Path.cwd()
    files = [_read("workflow", Path(workflow_path))] if workflow_path else []
    rules = spec.policy.rules
    if isinstance(rules, str):
        path = _in_folders(rules, [base, data_dir("policies")])
        if path is not None:
            files.append(_read("rules", path))
    if spec.policy.type in ("llm", "chain"):
        folders = [base, data_dir("policies") / "prompts"]
        for part in ("system", "user"):
            path = _in_folders(f"{spec.policy.prompt}.{part}.j2", folders)
            if path is not None:
                files.append(_read(f"prompt ({part})", path))
    model = model or spec.llm.model
    if model and model.startswith(SCRIPTED_PREFIX):
        script = Path(model[len(SCRIPTED_PREFIX) :])
        files.append(_read("model script", script if script.is_absolute() else base / script))
    return files


def machine_record(machine: CompiledMachine, workflow_path: str | None, model: str | None) -> dict[str, Any]:
    """Everything needed to draw the machine and tell what it was, without the file: stored once per spec hash."""
    return {
        "name": machine.name,
        "mermaid": to_mermaid(machine),
        "leaves": list(machine.leaves),
        "waiting": [leaf for leaf, w in zip(machine.leaves, machine.waiting, strict=True) if w],
        "final": [leaf for leaf, f in zip(machine.leaves, machine.final, strict=True) if f],
        "transitions": {
            leaf: [{"trigger": e.trigger, "dest": e.dest, "description": e.description} for e in edges]
            for leaf, edges in zip(machine.leaves, machine.edges, strict=True)
        },
        "files": loaded_files(machine, workflow_path, model),
    }


def keep_machine(agent: Any, from_tick: int, spec_hash: str) -> None:
    """Record with `agent`'s run that it executes its machine (`spec_hash`) from `from_tick` on (nothing without a
    store)."""
    store = getattr(agent, "store", None)
    if store is None:
        return
    store.keep_machine(
        agent.run_id, from_tick, spec_hash, lambda: machine_record(agent.machine, agent.workflow_path, agent.model)
    )


def file_changes(record: dict[str, Any]) -> list[dict[str, Any]]:
    """For each kept file: whether it is unchanged, changed or gone since the run executed it."""
    out = []
    for f in record.get("files", []):
        path = Path(f["path"])
        now: str | None
        try:
            now = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            status, now = "deleted", None
        else:
            status = "unchanged" if f.get("digest") == file_digest(now) else "changed"
        out.append({**f, "status": status, "now": now if status == "changed" else None})
    return out
