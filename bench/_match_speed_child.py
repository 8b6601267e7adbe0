"""The part of bench/match_speed_bench.py that runs inside one version of the code (PYTHONPATH picks which).

    python bench/_match_speed_child.py setup HOME SIZE VECTORS.npy   # a store of SIZE procedures, indexed
    python bench/_match_speed_child.py store HOME SIZE               # the same store, not indexed
    python bench/_match_speed_child.py warm HOME QUERIES.json        # warm `match` latency, JSON on stdout

Procedures are the NL2Bash dev commands (stored set of match_bench.py), then synthetic copies of them up to SIZE
("variant k" of a command, its description marked "copy i"). Their vectors come from VECTORS.npy (MiniLM, computed once
by the parent for the stored texts; a copy gets its original's vector plus a little fixed noise), so building a 10k
index costs no embedding; queries are embedded by MiniLM in the match, as a user meets them.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

_path = list(sys.path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import percentile  # noqa: E402
from match_bench import load_split, program_of  # noqa: E402

sys.path[:] = [
    str(Path(__file__).resolve().parent),
    *_path,
]  # match_bench puts this checkout first: PYTHONPATH must win

NOISE = 0.02


def procedures(size: int) -> list[tuple[int, str, str, str]]:
    """(index of the original stored command, task type, description, command) for SIZE procedures."""
    stored = load_split(Path(os.environ["SHERPA_SKILLS_MATCHING_DATA"]) / "nl2bash-dev.jsonl")["stored"]
    out = []
    for i in range(size):
        j, k = i % len(stored), i // len(stored)
        command, description = stored[j]
        if k == 0:
            out.append((j, program_of(command), description, command))
        else:
            out.append((j, f"variant-{k}", f"{description} (variant {k}, copy {i})", f"{command} # variant {k}"))
    return out


def fill(home: Path, size: int) -> tuple[Any, list[tuple[Any, int]]]:
    from seams import CapturedProcedure, ProcedureDatabase, ProcedureStep

    home.mkdir(parents=True, exist_ok=True)
    store = ProcedureDatabase(path=home / "store.db")
    made = []
    for i, (j, task_type, description, command) in enumerate(procedures(size)):
        step = ProcedureStep.model_construct(
            command=command,
            expected_exit_code=0,
            expected_output_pattern=None,
            timeout_secs=60.0,
            env_vars=[],
            cwd=None,
        )
        proc = store.add_procedure(
            CapturedProcedure(
                id=f"p{i:06d}",
                task_type=task_type,
                description=description,
                steps=[step],
                success_count=2,
                source="manual",
            )
        )
        made.append((proc, j))
    return store, made


class TableEmbedder:
    """MiniLM's name and space, vectors looked up (texts the table lacks go to MiniLM itself)."""

    def __init__(self, table: dict[str, Any]):
        from seams import MiniLMEmbedder

        self.inner = MiniLMEmbedder()
        self.name, self.semantic, self.dim = self.inner.name, True, self.inner.dim
        self.table = table
        self.missed = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in texts if t not in self.table]
        self.missed += len(missing)
        if missing:
            self.table.update(zip(missing, self.inner.embed(missing), strict=True))
        return [list(map(float, self.table[t])) for t in texts]


def setup(home: Path, size: int, vectors_file: Path) -> None:
    import numpy as np
    from seams import Matcher, describe

    base = np.load(vectors_file)
    store, made = fill(home, size)
    rng = np.random.default_rng(7)
    table = {}
    for proc, j in made:
        v = base[j] + (
            rng.normal(0.0, NOISE, base.shape[1]).astype(np.float32) if proc.task_type.startswith("variant-") else 0.0
        )
        table[describe(proc)] = v / np.linalg.norm(v)
    embedder = TableEmbedder(table)
    t0 = time.perf_counter()
    if "embedder" in inspect.signature(Matcher).parameters:  # the procedure index
        Matcher(store, embedder=embedder).reindex()
    else:  # the chromadb companion
        from seams import Companion

        Matcher(store, companion=Companion(home / "companion", embedder=embedder)).reindex()
    print(json.dumps({"procedures": store.count(), "index_s": time.perf_counter() - t0, "embedded": embedder.missed}))


def warm(home: Path, queries_file: Path) -> None:
    from seams import Matcher, ProcedureDatabase

    queries = json.loads(queries_file.read_text())
    matcher = Matcher(ProcedureDatabase(path=home / "store.db"))
    t0 = time.perf_counter()
    first = matcher.match(queries[0])
    first_s = time.perf_counter() - t0
    for q in queries[:5]:
        matcher.match(q)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        matcher.match(q)
        times.append((time.perf_counter() - t0) * 1000)
    print(
        json.dumps(
            {
                "p50": percentile(times, 50),
                "p95": percentile(times, 95),
                "n": len(times),
                "first_s": first_s,
                "mode": first.mode,
                "degraded": first.degraded,
            }
        )
    )


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "setup":
        setup(Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
    elif what == "store":
        fill(Path(sys.argv[2]), int(sys.argv[3]))
    elif what == "warm":
        warm(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        raise SystemExit(f"unknown step {what!r}")
