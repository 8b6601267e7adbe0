"""The candidate review queue: near-identical candidates (the same steps once values are set aside) as one row with a
count, rows ordered by how often what they do was seen, most first."""

from __future__ import annotations

from typing import Any


def support(p: Any) -> int:
    """How often a candidate was seen: mining's count of separate sessions or days, else its successes, counted and
    claimed (an order for the queue, never evidence)."""
    mined = (p.context or {}).get("mined") or {}
    value = mined.get("support")
    return int(value) if isinstance(value, int) and value > 0 else int(p.success_count + p.claimed_successes)


def group_key(p: Any) -> tuple[Any, ...]:
    """Steps compared by program, sub-command, flags and operators; paths, values and parameters are slots. A
    trajectory (decisions, no steps) or a step the shell parser cannot read is its own group."""
    from ..skills.api import SkillStore

    shapes = SkillStore.step_shapes(p)
    return ("id", p.id) if shapes is None else ("steps", p.kind, shapes)


def candidate_groups(candidates: list[tuple[Any, dict[str, Any]]]) -> list[dict[str, Any]]:
    """(procedure, its summary row) pairs → one row per group: its representative (the best-supported member, the
    newest on a tie) is the one a review acts on; the others are listed with it."""
    groups: dict[tuple[Any, ...], list[tuple[Any, dict[str, Any]]]] = {}
    for p, row in candidates:
        groups.setdefault(group_key(p), []).append((p, {**row, "support": support(p)}))
    out = []
    for members in groups.values():
        members.sort(key=lambda m: (-m[1]["support"], -m[0].updated))
        rows = [row for _, row in members]
        out.append(
            {**rows[0], "group_size": len(rows), "group_support": sum(r["support"] for r in rows), "others": rows[1:]}
        )
    out.sort(key=lambda g: (-g["group_support"], -g["support"], g["id"]))
    return out
