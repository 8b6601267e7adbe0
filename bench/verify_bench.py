"""What the borderline verifier adds and costs on the NL2Bash dev split: every query matched without and with it, in
the same run. Rewrites the `## Procedure matching: verifier (NL2Bash dev)` section of bench/RESULTS.md.

    SHERPA_SKILLS_MATCHING_DATA=../shared/matching python bench/verify_bench.py                  # scripted stand-ins
    ... --model openai/NAME             # also a real model through litellm (e.g. a local server: OPENAI_API_BASE)
    ... --embedding-cache /tmp/e.pkl    # keep MiniLM vectors between runs
    ... --no-write

Without a real model the figures bound the verifier: the *oracle* stand-in says yes exactly when the candidate is
the procedure the query is about (the most it can add), *always yes* is the least careful model (what a verifier
that cannot say no would cost in safety); both go through the real code path (prompt, JSON, counting), so calls and
tokens are what the matcher spends (the stand-in counts about four characters a token).
"""

from __future__ import annotations

import json
import pickle
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import match_bench as mb  # noqa: E402
from harness import machine, parse, write_section  # noqa: E402
from match_calibrate import dev_split, options  # noqa: E402

SECTION = "Procedure matching: verifier (NL2Bash dev)"
NO_MODEL = (
    "No real model in this run. Measured earlier, on the one-candidate verifier this judge replaced (asked about a "
    "best candidate in [0.25, floor) only): SmolLM2-135M-Instruct (Q4_1, llama-cpp-python, the only model offline "
    "here) answered exactly as the always-yes stand-in, confirming every candidate, wrong ones included; a model that "
    "cannot say no is no judge, so the model judge stays off unless asked for (`--verify`, a learning workflow's own "
    "model)."
)


def oracle_script(path: Path, split: dict[str, Any]) -> None:
    """Chooses exactly (query, the procedure its command is stored as), at whichever place it is offered; else none."""
    answers = [
        {
            "match": "^Task: "
            + re.escape(q.strip()[:500])
            + rf"\n\n(?:[^\n]*\n){{{k - 1}}}{k}\. "
            + re.escape(split["stored"][g][1][:200])
            + " — steps: "
            + re.escape(split["stored"][g][0][:100]),  # descriptions repeat in NL2Bash: the command decides
            "respond": {"choice": k, "params": {}},
        }
        for q, g in split["positives"]
        for k in range(1, 6)
    ]
    path.write_text(json.dumps({"answers": answers, "default": '{"choice": 0, "params": {}}'}), encoding="utf-8")


def run(matcher: Any, queries: list[tuple[str, str | None, bool]], verifier: Any) -> dict[str, Any]:
    chosen, calls, tokens, asked, t0 = [], 0, 0, 0, time.perf_counter()
    for query, gold, same in queries:
        d = matcher.match(query, verify=verifier)
        chosen.append((d.procedure_id, gold, same))
        calls += d.llm_calls
        tokens += d.tokens
        asked += d.verification is not None
    seconds = time.perf_counter() - t0
    pos = [(s, g) for s, g, _ in chosen if g is not None]
    neg = [(s, same) for s, g, same in chosen if g is None]
    return {**mb.rates(pos, neg), "asked": asked, "calls": calls, "tokens": tokens, "seconds": seconds}  # type: ignore[arg-type]


def main() -> int:
    parser = options(__doc__ or "")
    parser.add_argument("--model", action="append", default=[], help="also a real model (litellm string); repeatable")
    args = parse(parser)
    split = dev_split(args.embedding_cache, args.quick)
    if split is None:
        return 0
    from seams import Verifier

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
        home = Path(tmp)
        matcher, ids, _ = mb.build_store(home, split["stored"])
        queries = [(q, ids[g], False) for q, g in split["positives"]] + [
            (q, None, same) for q, same, _ in split["negatives"]
        ]
        oracle, yes = home / "oracle.json", home / "yes.yaml"
        oracle_script(oracle, split)
        yes.write_text('answers:\n  - match: "."\n    respond: {choice: 1, params: {}}\n', encoding="utf-8")
        results["off (default)"] = run(matcher, queries, None)
        print("off", results["off (default)"], flush=True)
        for name, model in [
            ("oracle stand-in", f"scripted/{oracle}"),
            ("always-yes stand-in", f"scripted/{yes}"),
            *[(f"`{m}`", m) for m in args.model],
        ]:
            results[name] = run(matcher, queries, Verifier(model))
            print(name, results[name], flush=True)
    if args.embedding_cache:
        args.embedding_cache.write_bytes(pickle.dumps(mb.embedder().cache))
    pct, n = mb.percent, len(queries)
    base = results["off (default)"]
    rows = [
        f"| {name} | {pct(r['hit'])} ({100 * (r['hit'] - base['hit']):+.1f}) | {pct(r['wrong'])} | {pct(r['false'])} | "
        f"{r['asked']} ({pct(r['asked'] / n)}) | {r['calls']} | {r['tokens']} | "
        f"{r['tokens'] / max(r['calls'], 1):.0f} | {r['seconds']:.0f} s |"
        for name, r in results.items()
    ]
    body = "\n".join(
        [
            f"Machine: {machine()}.",
            "Command: `SHERPA_SKILLS_MATCHING_DATA=../shared/matching python bench/verify_bench.py"
            + "".join(f" --model {m}" for m in args.model)
            + "`.",
            "",
            f"{n} queries ({len(split['positives'])} positive); "
            "the judge is asked whenever the match needs confirmation (at most five candidates; always-yes "
            "chooses the first). Same store and queries as the matching section; "
            "the first row is the same run without it.",
            "",
            "| verifier | hit@1 (points vs off) | wrong | false replay | queries asked | calls | tokens | "
            "tokens per call | wall |",
            "|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            "The oracle row is the ceiling a perfect verifier reaches; "
            "the always-yes row is what a verifier that cannot say no "
            "costs in wrong and false replays. A real model lands between them; its row, when present, is measured.",
        ]
    )
    if not args.model:
        body += "\n\n" + NO_MODEL
    print(body)
    if not args.no_write:
        write_section(SECTION, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
