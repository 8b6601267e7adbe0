"""How often `Any` stands where a type could: the share of function signatures in a package that name it.

    python tests/_any_share.py [PACKAGE_DIR] [--by-folder]

A signature counts when any of its annotations (a parameter's, `*args`'s, `**kwargs`'s or the return's) names `Any`
(`Any`, `typing.Any`, inside `dict[str, Any]` too); `self`/`cls` and unannotated parameters name nothing. The slot
share (annotations naming `Any` among all annotations) is printed beside it.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sherpa_skills"


@dataclass
class Share:
    signatures: int = 0
    with_any: int = 0
    slots: int = 0
    slots_with_any: int = 0

    def add(self, other: Share) -> None:
        self.signatures += other.signatures
        self.with_any += other.with_any
        self.slots += other.slots
        self.slots_with_any += other.slots_with_any

    @property
    def percent(self) -> float:
        return 100 * self.with_any / self.signatures if self.signatures else 0.0

    @property
    def slot_percent(self) -> float:
        return 100 * self.slots_with_any / self.slots if self.slots else 0.0


def _names_any(annotation: ast.expr) -> bool:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a string annotation
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    return any(
        (isinstance(n, ast.Name) and n.id == "Any") or (isinstance(n, ast.Attribute) and n.attr == "Any")
        for n in ast.walk(annotation)
    )


def file_share(path: Path) -> Share:
    share = Share()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        a = node.args
        params = [
            *a.posonlyargs,
            *a.args,
            *a.kwonlyargs,
            *([a.vararg] if a.vararg else []),
            *([a.kwarg] if a.kwarg else []),
        ]
        annotations = [p.annotation for p in params if p.annotation is not None]
        if node.returns is not None:
            annotations.append(node.returns)
        hits = sum(_names_any(x) for x in annotations)
        share.signatures += 1
        share.with_any += hits > 0
        share.slots += len(annotations)
        share.slots_with_any += hits
    return share


def package_share(root: Path = PACKAGE, by_folder: Counter[str] | None = None) -> dict[str, Share]:
    """The share per top-level part of the package (a folder or a module), and the whole under ''."""
    parts: dict[str, Share] = {"": Share()}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        key = rel.parts[0] if len(rel.parts) > 1 else rel.name
        share = file_share(path)
        parts.setdefault(key, Share()).add(share)
        parts[""].add(share)
    return parts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", type=Path, default=PACKAGE)
    parser.add_argument("--by-folder", action="store_true", help="a line for each folder or top-level module too")
    args = parser.parse_args()
    parts = package_share(args.package)
    if args.by_folder:
        for key, share in sorted(parts.items()):
            if key:
                print(f"{key:<20} {share.with_any:>4}/{share.signatures:<4} {share.percent:5.1f} %")
    whole = parts[""]
    print(
        f"signatures naming Any: {whole.with_any}/{whole.signatures} = {whole.percent:.1f} %; "
        f"annotations naming Any: {whole.slots_with_any}/{whole.slots} = {whole.slot_percent:.1f} %"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
