"""`learn reindex` and `learn promote`: rebuild the indexes; a person vouches for a procedure."""

from __future__ import annotations

import argparse

from ..console import EXIT_OK, Bar
from ..console import console as _console
from ..console import print_json as _print_json
from .common import open_home, quiet_logs


def cmd_reindex(args: argparse.Namespace) -> int:
    """Embed every procedure and learning again, in batches,
    with a progress bar on the terminal (never silent on long work)."""
    import time

    house = open_home(args)
    store, home = house.skills, house.home
    quiet_logs(args, home)  # the embedder's and the index's log lines go to the log file, never into --json
    total = store.count()
    started = time.perf_counter()
    with Bar("embedding", as_json=args.json) as bar:
        bar(0, total, "procedures")
        count = store.reindex(progress=lambda done: bar(done, total, "procedures"))
    learnings = store.reindex_failures()
    seconds = time.perf_counter() - started
    if args.json:
        _print_json(
            {
                "reindexed": count,
                "learnings": learnings,
                "seconds": round(seconds, 3),
                "per_second": round((count + learnings) / seconds, 1) if seconds else None,
            }
        )
    else:
        _console(stderr=False).print(
            f"indexes rebuilt from the store: {count} procedures and {learnings} learnings in {seconds:.1f} s"
        )
    return EXIT_OK


def cmd_promote(args: argparse.Namespace) -> int:
    store = open_home(args).skills
    p = store.promote(store.get(args.id).id, by=args.agent)
    health = store.health(p.id)[0]
    promotion = store.promotions(p.id)[-1]
    refusal = store.replay_refusal(p, health)  # replay's own gate: promote never promises what replay refuses
    if args.json:
        _print_json(
            {
                **p.model_dump(mode="json"),
                "health": health.status,
                "replayable": refusal is None,
                "refusal": refusal,
                "promotion": promotion,
            }
        )
        return EXIT_OK
    console = _console()
    verdict = (
        f"it can be replayed (confidence {p.confidence:.2f})"
        if refusal is None
        else f"it cannot be replayed yet: {refusal}"
    )
    console.print(f"{p.id} is active and promoted by {promotion['promoted_by']}: {verdict}")
    earlier = promotion["executions_before"]
    console.print(
        f"health starts a fresh evidence window ({health.status}): "
        f"its {earlier} earlier execution{'s' if earlier != 1 else ''} "
        f"(was {promotion['health_before']}) no longer count, and are kept (`learn show`)"
        if earlier
        else f"health: {health.status} until it runs"
    )
    return EXIT_OK
