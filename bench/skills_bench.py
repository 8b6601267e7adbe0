"""Skill store speed: tokens saved by replay, replay overhead per shell step,
and `Matcher.match` at 10k/100k procedures.

Three parts, each runnable alone; every run rewrites the `## Skill store` section of bench/RESULTS.md from the
latest figures of every part (kept in bench/skills_bench.json), leaving the other sections untouched.

    python bench/skills_bench.py                       # all three parts (about 6 minutes on 2 quiet cores)
    python bench/skills_bench.py --quick               # tiny: 100/400 procedures, a repeat or two; prints only
    python bench/skills_bench.py --only replay         # one part: example, replay or match (comma-separated)
    python bench/skills_bench.py --only match --no-write   # print, do not touch RESULTS.md
    python bench/skills_bench.py --rebuild             # measure nothing: rebuild the section from skills_bench.json

The "Findings" text of the section comes from bench/skills_bench_notes.md (written by hand from the figures).

1. example: `examples/skills_loop/loop.py --json` in a subprocess: LLM calls and tokens of the planned run vs
   the replay.
2. replay: a 10-step procedure of cheap real commands, captured with `learn capture-success --steps-file`, replayed
   in-process through statemachines/replay.yaml (as `learn replay --execute --yes` does, without interpreter start-up),
   against `bash script.sh` running the same commands; per step, marginal per step, and where the time goes.
3. match: `Matcher.match` over 10k and 100k generated procedures (SQLite truth + chromadb companion + Aho-Corasick).
"""

from __future__ import annotations

import contextlib
import cProfile
import dataclasses
import gc
import io
import json
import os
import platform
import pstats
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter
from typing import Any

from harness import arguments, parse

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault(
    "SHERPA_SKILLS_SCRIPTED_VIA", "litellm"
)  # the recorded figures are through litellm's custom provider
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "RESULTS.md"
STATE = HERE / "skills_bench.json"
SECTION = "## Skill store"

TARGET_TOKEN_SAVING = 0.95
TARGET_REPLAY_RATIO = 1.2
TARGET_MATCH_P50_MS = 10.0


# ============================================================================================== helpers


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[k]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def quiet_logs(home: Path | None = None) -> None:
    """As the CLI does for `learn …`: console at error level; with a home, also the JSON log file it keeps."""
    from seams import configure

    if home is not None:
        (home / "logs").mkdir(exist_ok=True)
        configure(level="error", json_file=home / "logs" / "learn.jsonl")
    else:
        configure(level="error")


def cli_json(*argv: str) -> Any:
    """A `sherpa-skills` command in-process, its --json output parsed."""
    from seams import main as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli([*argv, "--json"])
    if code != 0:
        raise SystemExit(f"sherpa-skills {shlex.join(argv)} failed ({code}): {out.getvalue()[-800:]}")
    return json.loads(out.getvalue())


class PhaseTimer:
    """Wall time and call counts per named phase, by wrapping functions (attribute patches, undone on exit)."""

    def __init__(self) -> None:
        self.total: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attr: str, phase: str) -> None:
        original = getattr(owner, attr)
        raw = owner.__dict__.get(attr, original) if isinstance(owner, type) else original
        if isinstance(raw, (staticmethod, classmethod)):
            raise TypeError(f"cannot wrap {owner}.{attr}")
        total, calls = self.total, self.calls

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                total[phase] += perf_counter() - t0
                calls[phase] += 1

        setattr(owner, attr, timed)
        self._undo.append(lambda: setattr(owner, attr, raw))

    def wrap_action(self, registry: Any, name: str, phase: str) -> None:
        """Registered actions are held by the registry (and bound at load time): replace the definition."""
        definition = registry._actions[name]
        original = definition.fn
        total, calls = self.total, self.calls

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                total[phase] += perf_counter() - t0
                calls[phase] += 1

        registry._actions[name] = dataclasses.replace(definition, fn=timed)
        self._undo.append(lambda: registry._actions.__setitem__(name, definition))

    def restore(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    def reset(self) -> None:
        self.total.clear()
        self.calls.clear()


# ============================================================================================== 1. the example


def bench_example(quick: bool) -> dict[str, Any]:
    runs = 1 if quick else 3
    script = ROOT / "examples" / "skills_loop" / "loop.py"
    reports, walls = [], []
    for _ in range(runs):
        t0 = perf_counter()
        proc = subprocess.run([sys.executable, str(script), "--json"], capture_output=True, text=True, cwd=ROOT)
        walls.append(perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"{script} --json failed ({proc.returncode}): {proc.stderr[-1500:]}")
        reports.append(json.loads(proc.stdout))
    first = reports[0]
    keys = [
        (r["planned"]["llm_calls"], r["planned"]["tokens"], r["replayed"]["llm_calls"], r["replayed"]["tokens"])
        for r in reports
    ]
    planned, replayed = first["planned"], first["replayed"]
    saving = 1 - replayed["tokens"] / max(1, planned["tokens"])
    return {
        "command": f"python {script.relative_to(ROOT)} --json",
        "runs": runs,
        "deterministic": len(set(keys)) == 1,
        "wall_s": [round(w, 2) for w in walls],
        "planned": planned,
        "replayed": replayed,
        "replanned": first["replanned"],
        "replayed_v2": first["replayed_v2"],
        "stats": {k: first["stats"][k] for k in ("replays", "tokens_saved", "llm_calls_saved")},
        "token_saving": saving,
        "met_calls": replayed["llm_calls"] == 0,
        "met_tokens": saving >= TARGET_TOKEN_SAVING,
    }


# ============================================================================================== 2. replay overhead

STEPS = [
    "mkdir -p d",
    "touch d/f1",
    "cp d/f1 d/f2",
    "test -f d/f2",
    "printf x > d/f3",
    "grep -q x d/f3",
    "mv d/f2 d/f4",
    "chmod 644 d/f3",
    "ln -sf f3 d/l3",
    "rm -f d/f1 d/f4",
]
QUERY = "tidy the scratch folder d: create files, copy, move and remove them"
LONG = 50  # the same ten steps five times: does the cost per step grow with the procedure's length?


def steps(n: int) -> list[str]:
    return (STEPS * (n // len(STEPS) + 1))[:n]


class ReplayBench:
    def __init__(self, tmp: Path):
        from seams import data_file

        from sherpa_skills import RunStore, load_workflow

        self.home = tmp / "home"
        self.work = tmp / "work"
        self.home.mkdir()
        self.work.mkdir()
        self.ids: dict[int, str] = {}
        for n in (10, 2, LONG):
            steps_file = tmp / f"steps{n}.json"
            about = (
                {"description": QUERY, "tags": ["scratch", "files"]}
                if n == 10
                else {"description": "Prepare an empty marker file", "tags": ["marker"]}
                if n == 2
                else {"description": "bench long routine", "tags": ["long"]}
            )
            steps_file.write_text(json.dumps({**about, "steps": [{"command": c} for c in steps(n)]}))
            proc = cli_json(
                "learn",
                "capture-success",
                f"bench-scratch-{n}",
                "--steps-file",
                str(steps_file),
                "--home",
                str(self.home),
            )
            if proc.get("outcome") != "captured" or len(proc["steps"]) != n:
                raise SystemExit(f"capture of the {n}-step procedure went wrong: {proc}")
            if proc.get("index_warning"):
                raise SystemExit(f"companion not indexed: {proc['index_warning']}")
            self.ids[n] = proc["id"]
            cli_json(
                "learn", "promote", proc["id"], "--home", str(self.home)
            )  # captured once is not proof: vouch for it
        quiet_logs(self.home)  # what `learn replay` configures (error console + the home's JSON log file)
        self.path = data_file("statemachines", "replay.yaml")
        self.workflow = load_workflow(self.path)
        self.runs = RunStore(home=self.home)
        self.scripts: dict[int, Path] = {}
        for n in (10, 2, 0, LONG):
            script = tmp / f"bare{n}.sh"
            script.write_text("set -e\n" + "".join(c + "\n" for c in steps(n)))
            self.scripts[n] = script
        self.bash = shutil.which("bash") or "/bin/bash"

    # ----- the configurations, each one run, returning seconds

    def bash_script(self, n: int) -> float:
        t0 = perf_counter()
        proc = subprocess.run(
            [self.bash, str(self.scripts[n])], cwd=self.work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        elapsed = perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"bare script failed: {proc.stderr.decode()[-500:]}")
        return elapsed

    def sh_per_step(self, n: int) -> float:
        """The process-per-step floor: /bin/sh -c for each command from Python, as the shell action spawns it."""
        t0 = perf_counter()
        for command in steps(n):
            proc = subprocess.run(
                ["/bin/sh", "-c", command],
                cwd=self.work,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                start_new_session=True,
            )
            if proc.returncode != 0:
                raise SystemExit(f"{command} failed: {proc.stderr.decode()}")
        return perf_counter() - t0

    def run_steps(self, n: int) -> float:
        """The library's step runner alone (run_step → shell action → validation), no machine, no store."""
        from seams import ProcedureStep, run_step

        t0 = perf_counter()
        for i, command in enumerate(steps(n), 1):
            outcome = run_step(ProcedureStep(command=command), command, i, str(self.work))
            if not outcome.passed:
                raise SystemExit(f"{command}: {outcome.reason}")
        return perf_counter() - t0

    def replay(self, n: int, by_id: bool) -> float:
        inputs: dict[str, Any] = {
            "query": QUERY,
            "params": {},
            "execute": True,
            "assume_yes": True,
            "min_confidence": 0.8,
            "cwd": str(self.work),
        }
        if by_id:
            inputs["procedure_id"] = self.ids[n]
        t0 = perf_counter()
        agent = self.workflow.agent(store=self.runs, home=self.home)
        result = agent.run(inputs)
        elapsed = perf_counter() - t0
        if result.state != "succeeded" or result.context["procedure"]["id"] != self.ids[n]:
            raise SystemExit(
                f"replay ended {result.status}/{result.state} with {result.context.get('procedure', {}).get('id')}"
                f" (wanted {self.ids[n]}): {result.error or result.context.get('divergence')}"
                f" {result.context.get('select_reason')} {result.context.get('matches')}"
            )
        if result.counters.get("llm_calls"):
            raise SystemExit("a replay called the LLM")
        return elapsed


def bench_replay(quick: bool) -> dict[str, Any]:
    reps = 2 if quick else 40
    tmp = Path(tempfile.mkdtemp(prefix="sherpa-bench-replay-"))
    try:
        b = ReplayBench(tmp)
        configs: dict[str, Callable[[], float]] = {
            "bash10": lambda: b.bash_script(10),
            "bash2": lambda: b.bash_script(2),
            "bash0": lambda: b.bash_script(0),
            "sh10": lambda: b.sh_per_step(10),
            "sh2": lambda: b.sh_per_step(2),
            "step10": lambda: b.run_steps(10),
            "step2": lambda: b.run_steps(2),
            "replay_query10": lambda: b.replay(10, by_id=False),
            "replay_id10": lambda: b.replay(10, by_id=True),
            "replay_id2": lambda: b.replay(2, by_id=True),
            f"bash{LONG}": lambda: b.bash_script(LONG),
            f"replay_id{LONG}": lambda: b.replay(LONG, by_id=True),
        }
        for fn in configs.values():  # warm-up: model load, chromadb open, page cache
            fn()
        samples: dict[str, list[float]] = {k: [] for k in configs}
        order = list(configs)
        for rep in range(reps):
            rotated = order[rep % len(order) :] + order[: rep % len(order)]
            for key in rotated:
                samples[key].append(configs[key]())
        ms = {k: med(v) * 1e3 for k, v in samples.items()}
        spread = {k: (min(v) * 1e3, max(v) * 1e3) for k, v in samples.items()}

        phases = replay_phases(b, quick)
        profile = replay_profile(b, quick)
        growth = replay_growth(b, quick)  # last: it leaves thousands of executions behind
        b.runs.close()
        return {
            "reps": reps,
            "ms": ms,
            "spread": spread,
            "phases": phases,
            "growth": growth,
            "profile": profile,
            "steps": STEPS,
            "bash": b.bash,
            "sh": os.path.realpath("/bin/sh"),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def replay_phases(b: ReplayBench, quick: bool) -> dict[str, Any]:
    """Where a replay's time goes: perf_counter around actions, store writes and the spawn, in a separate pass."""
    import subprocess as sp

    from seams import Companion, Database, MiniLMEmbedder, ProcedureDatabase, runtime, shell
    from seams import matcher as matcher_mod

    from sherpa_skills import RunStore, default_registry, load_workflow

    reps = 1 if quick else 15
    timer = PhaseTimer()
    for name in (
        "skill_match",
        "skill_select",
        "skill_preflight",
        "skill_run_step",
        "skill_postconditions",
        "skill_record",
    ):
        timer.wrap_action(default_registry, name, f"action {name}")
    timer.wrap(matcher_mod.Matcher, "match", "match: Matcher.match")
    timer.wrap(lexicon_class(), "__init__", "match: key-term automaton build")
    timer.wrap(Companion, "_open", "match: companion open (chromadb client)")
    timer.wrap(Companion, "_require", "match: companion get_collection")
    timer.wrap(MiniLMEmbedder, "embed", "match: query embedding (MiniLM)")
    timer.wrap(Companion, "query", "match: Companion.query (all of the semantic lookup)")
    timer.wrap(ProcedureDatabase, "health", "select: ProcedureDatabase.health")
    timer.wrap(ProcedureDatabase, "executions", "select/health: ProcedureDatabase.executions")
    if hasattr(ProcedureDatabase, "success_replays"):
        timer.wrap(ProcedureDatabase, "success_replays", "select: ProcedureDatabase.success_replays (COUNT)")
    timer.wrap(ProcedureDatabase, "get", "ProcedureDatabase.get (all callers)")
    timer.wrap(runtime, "render_command", "preflight: render_command (jinja2 from_string)")
    timer.wrap(sp.Popen, "__init__", "step: subprocess spawn (Popen.__init__, fork/exec /bin/sh)")
    timer.wrap(shell, "_communicate", "step: wait for the child (command runs, pipes drained)")
    timer.wrap(time, "sleep", "step: time.sleep inside Popen.wait(timeout=…) polling after EOF")
    timer.wrap(shell, "run_shell", "step: shell action run_shell (spawn + wait + env/args)")
    timer.wrap(RunStore, "create_run", "sqlite: RunStore.create_run")
    timer.wrap(RunStore, "commit_tick", "sqlite: RunStore.commit_tick")
    timer.wrap(RunStore, "mark_started", "sqlite: RunStore.mark_started (side-effect intent)")
    timer.wrap(Database, "transaction", "sqlite: a store's write, COMMIT included (Database.transaction)")
    timer.wrap(ProcedureDatabase, "record_execution", "sqlite: ProcedureDatabase.record_execution")
    out: dict[str, Any] = {}
    try:
        workflow = load_workflow(b.path)  # binds the wrapped action definitions
        original = b.workflow
        b.workflow = workflow
        try:
            for key, by_id in (("replay_query10", False), ("replay_id10", True)):
                b.replay(10, by_id)  # warm
                timer.reset()
                total = 0.0
                for _ in range(reps):
                    total += b.replay(10, by_id)
                out[key] = {
                    "total_ms": total / reps * 1e3,
                    "phases": {
                        k: {"ms": v / reps * 1e3, "calls": timer.calls[k] / reps} for k, v in timer.total.items()
                    },
                }
        finally:
            b.workflow = original
    finally:
        timer.restore()
    return out


def replay_growth(b: ReplayBench, quick: bool) -> dict[str, Any]:
    """skill_select lists every execution of the procedure: time a by-id replay after 10,000 more executions."""
    from seams import skill_store

    store = skill_store(b.home)
    extra = 100 if quick else 10_000
    pid = b.ids[10]
    before = store.executions(pid)
    reps = 2 if quick else 11
    t_before = med([b.replay(10, by_id=True) for _ in range(reps)]) * 1e3
    t0 = perf_counter()
    store.conn.execute("BEGIN IMMEDIATE")
    now = time.time()
    store.conn.executemany(
        "INSERT INTO executions (procedure_id, version, started, ended, outcome, diverged_step, reason, "
        "tokens, llm_calls, run_id) VALUES (?, 1, ?, ?, 'success', NULL, NULL, 0, 0, NULL)",
        [(pid, now, now)] * extra,
    )
    store.conn.execute("COMMIT")
    insert_s = perf_counter() - t0
    t_after = med([b.replay(10, by_id=True) for _ in range(reps)]) * 1e3
    t1 = perf_counter()
    n = len(store.executions(pid))
    list_ms = (perf_counter() - t1) * 1e3
    t2 = perf_counter()
    store.health(pid)
    health_ms = (perf_counter() - t2) * 1e3
    return {
        "executions_before": len(before),
        "executions_after": n,
        "extra": extra,
        "replay_ms_before": t_before,
        "replay_ms_after": t_after,
        "executions_list_ms": list_ms,
        "health_ms": health_ms,
        "insert_s": insert_s,
    }


def replay_profile(b: ReplayBench, quick: bool) -> list[tuple[str, float, float, int]]:
    """cProfile of by-id 10-step replays: the functions with the most own time (inflated by the profiler)."""
    reps = 1 if quick else 15
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(reps):
        b.replay(10, by_id=True)
    prof.disable()
    stats = pstats.Stats(prof)
    rows = []
    for (file, line, name), (_cc, nc, tt, ct, _) in stats.stats.items():  # type: ignore[attr-defined]
        short = f"{Path(file).name}:{line}({name})" if file != "~" else name
        rows.append((short, tt / reps * 1e3, ct / reps * 1e3, nc // reps))
    rows.sort(key=lambda r: -r[1])
    return rows[:15]


# ============================================================================================== 3. match at scale


def lexicon_class() -> Any:
    """The matcher's key-term index: `TermIndex` (numpy postings, in the procedure index) in current code."""
    from seams import TermIndex

    return TermIndex


def build_terms(store: Any, include_candidates: bool) -> Any:
    """The key-term index of a store, built from its rows as a fresh process without an index file would."""
    from seams import Snapshot, procedure_words, words

    snap, _ = Snapshot.build(store.index_rows(), (0, store.generation()), "none", 0, procedure_words, None)
    return snap.term_index(include_candidates, words)


VERBS: dict[str, list[str]] = {
    "deploy": ["ship", "roll out", "push out"],
    "build": ["compile", "assemble", "make"],
    "test": ["check", "verify", "run the tests for"],
    "release": ["publish a new version of", "cut a release of", "put out"],
    "backup": ["back up", "snapshot", "take a copy of"],
    "restore": ["recover", "bring back", "reload from backup"],
    "migrate": ["move", "upgrade the schema of", "port"],
    "rotate": ["renew", "cycle", "refresh"],
    "clean": ["tidy up", "purge", "clear out"],
    "lint": ["style-check", "statically analyse", "vet"],
    "format": ["reformat", "prettify", "fix the style of"],
    "package": ["bundle", "pack up", "wrap up"],
    "sync": ["mirror", "copy across", "replicate"],
    "provision": ["set up", "stand up", "create"],
    "upgrade": ["update", "bump", "move to the latest"],
    "rollback": ["revert", "undo the deploy of", "go back to the previous"],
    "benchmark": ["measure the speed of", "load test", "time"],
    "archive": ["store away", "compress and keep", "shelve"],
    "reindex": ["rebuild the index of", "catalogue", "re-crawl"],
    "seed": ["populate", "fill", "load fixtures into"],
    "export": ["dump", "extract", "write out"],
    "import": ["load", "ingest", "bring in"],
    "scale": ["resize", "add replicas to", "grow"],
    "restart": ["reboot", "bounce", "reload"],
    "audit": ["review", "inspect", "scan"],
    "monitor": ["watch", "keep an eye on", "check the health of"],
    "install": ["set up", "put in place", "add"],
    "prune": ["trim", "remove old", "cut back"],
    "vendor": ["copy in", "pin", "freeze"],
    "profile": ["find hot spots in", "trace", "measure"],
}
OBJECTS: dict[str, tuple[str, list[str]]] = {
    "web-service": ("k8s", ["web app", "website backend"]),
    "api": ("k8s", ["rest api", "http api"]),
    "worker": ("k8s", ["background jobs", "queue consumer"]),
    "frontend": ("node", ["web ui", "single page app"]),
    "docs": ("python", ["documentation", "manual"]),
    "database": ("db", ["db", "data store"]),
    "postgres": ("db", ["postgres db", "pg database"]),
    "mysql": ("db", ["mysql db", "mariadb"]),
    "redis-cache": ("db", ["cache", "redis"]),
    "search-index": ("db", ["elasticsearch index", "search engine"]),
    "python-package": ("python", ["python library", "pypi package"]),
    "wheel": ("python", ["python wheel", "binary distribution"]),
    "npm-package": ("node", ["node module", "javascript library"]),
    "rust-crate": ("rust", ["rust library", "cargo crate"]),
    "go-binary": ("go", ["go program", "go service"]),
    "docker-image": ("k8s", ["container image", "docker container"]),
    "helm-chart": ("k8s", ["chart", "kubernetes chart"]),
    "cluster": ("k8s", ["kubernetes cluster", "k8s nodes"]),
    "terraform-stack": ("cloud", ["infrastructure", "terraform workspace"]),
    "s3-bucket": ("cloud", ["bucket", "object storage"]),
    "static-site": ("web", ["website", "landing page"]),
    "nginx-config": ("web", ["web server config", "reverse proxy"]),
    "tls-certificates": ("web", ["ssl certs", "https certificates"]),
    "logs": ("files", ["log files", "application logs"]),
    "backups": ("files", ["backup files", "snapshots"]),
    "home-directory": ("files", ["home folder", "user files"]),
    "dataset": ("ml", ["training data", "data set"]),
    "ml-model": ("ml", ["model", "neural network"]),
    "notebooks": ("ml", ["jupyter notebooks", "analysis notebooks"]),
    "repository": ("git", ["repo", "git repository"]),
    "release-branch": ("git", ["branch", "maintenance branch"]),
    "changelog": ("git", ["release notes", "change log"]),
    "dependencies": ("python", ["requirements", "third-party packages"]),
    "lockfile": ("node", ["package-lock", "lock file"]),
    "vm-image": ("cloud", ["machine image", "ami"]),
    "dns-records": ("cloud", ["dns", "domain records"]),
    "cron-jobs": ("web", ["scheduled jobs", "crontab"]),
    "dashboards": ("web", ["grafana dashboards", "monitoring panels"]),
    "feature-flags": ("k8s", ["toggles", "flags"]),
    "mail-queue": ("web", ["email queue", "postfix queue"]),
}
COMMANDS: dict[str, list[str]] = {
    "k8s": [
        "docker build -t registry.local/{p}:{v} .",
        "docker push registry.local/{p}:{v}",
        "kubectl config use-context {env}",
        "helm upgrade --install {p} charts/{p} -n {env} --set image.tag={v}",
        "kubectl rollout status deploy/{p} -n {env} --timeout=120s",
        "kubectl scale deploy/{p} --replicas={n} -n {env}",
        "kubectl get pods -n {env} -l app={p}",
        "kubectl rollout undo deploy/{p} -n {env}",
        "kubectl apply -f k8s/{env}/{p}.yaml",
        "helm lint charts/{p}",
        "kubectl delete pod -l app={p} -n {env}",
    ],
    "python": [
        "python -m venv .venv",
        "pip install -r requirements.txt",
        "pip install -e .[dev]",
        "pytest -q tests/{p}",
        "ruff check src/{p}",
        "mypy src/{p}",
        "python -m build",
        "twine upload dist/{p}-{v}*",
        "mkdocs build --strict",
        "pip-compile requirements.in",
        "black --check src",
        "python -m {p}.manage migrate",
    ],
    "node": [
        "npm ci",
        "npm run build",
        "npm test -- --ci",
        "npx eslint src/{p}",
        "npx prettier --write src",
        "npm publish --access public",
        "npm version {v}",
        "yarn install --frozen-lockfile",
        "npx vite build --mode {env}",
        "npm audit --production",
    ],
    "rust": [
        "cargo build --release",
        "cargo test --workspace",
        "cargo clippy -- -D warnings",
        "cargo fmt --check",
        "cargo publish -p {p}",
        "cargo bench --bench {p}",
        "cargo update -p {p}",
    ],
    "go": [
        "go build -o bin/{p} ./cmd/{p}",
        "go test ./...",
        "go vet ./...",
        "gofmt -l .",
        "go mod tidy",
        "golangci-lint run",
        "goreleaser release --clean",
    ],
    "db": [
        "pg_dump -Fc {p}_{env} > /backups/{p}-{d}.dump",
        "pg_restore -d {p}_{env} /backups/{p}-{d}.dump",
        "psql -d {p}_{env} -f migrations/{n}.sql",
        "mysqldump --single-transaction {p} > {p}-{d}.sql",
        "redis-cli -n {n} FLUSHDB",
        "redis-cli BGSAVE",
        "alembic upgrade head",
        "curl -XPOST localhost:9200/{p}/_refresh",
        "vacuumdb --analyze {p}_{env}",
        "gzip -9 /backups/{p}-{d}.dump",
    ],
    "files": [
        "tar -czf /archive/{p}-{d}.tar.gz /var/log/{p}",
        "rsync -az --delete /srv/{p}/ backup:/srv/{p}/",
        "find /var/log/{p} -name '*.log' -mtime +{n} -delete",
        "gzip /var/log/{p}/*.log",
        "du -sh /srv/{p}",
        "cp -a /srv/{p} /srv/{p}.bak",
        "sha256sum /archive/{p}-{d}.tar.gz",
        "logrotate -f /etc/logrotate.d/{p}",
    ],
    "cloud": [
        "terraform init -input=false",
        "terraform plan -out=tf.plan -var env={env}",
        "terraform apply tf.plan",
        "aws s3 sync ./dist s3://{p}-{env}/",
        "aws s3 ls s3://{p}-{env}/",
        "packer build images/{p}.pkr.hcl",
        "gcloud dns record-sets list --zone={p}",
        "aws ec2 describe-images --owners self",
    ],
    "web": [
        "nginx -t",
        "systemctl reload nginx",
        "certbot renew --cert-name {p}.example.com",
        "systemctl restart {p}",
        "curl -fsS https://{p}.example.com/healthz",
        "crontab -l",
        "postqueue -f",
        "journalctl -u {p} --since today",
        "hugo --minify",
    ],
    "ml": [
        "dvc pull data/{p}",
        "python train.py --config configs/{p}.yaml --epochs {n}",
        "python evaluate.py --model models/{p}-{v}.pt",
        "dvc push",
        "jupyter nbconvert --execute notebooks/{p}.ipynb",
        "mlflow models serve -m runs:/{p}/model",
    ],
    "git": [
        "git fetch --all --prune",
        "git checkout -b release/{v}",
        "git merge --no-ff develop",
        "git tag -a v{v} -m 'release {v}'",
        "git push origin --tags",
        "git cherry-pick {h}",
        "git log --oneline v{v}..HEAD > CHANGELOG.md",
        "git gc --aggressive",
    ],
}
PROJECTS = [
    f"{a}{b}"
    for a in (
        "billing",
        "checkout",
        "auth",
        "search",
        "inventory",
        "payments",
        "notifications",
        "analytics",
        "catalog",
        "shipping",
        "reporting",
        "gateway",
        "ledger",
        "profile",
        "chat",
        "media",
        "orders",
        "pricing",
        "recommendations",
        "scheduler",
        "crm",
        "wiki",
        "blog",
        "shop",
        "admin",
        "metrics",
        "alerts",
        "fraud",
        "loyalty",
        "onboarding",
    )
    for b in ("", "-v2", "-core", "-edge", "-legacy")
]
ENVS = ["dev", "staging", "production", "qa", "eu-west", "us-east", "sandbox", "canary"]
DESCRIPTIONS = [
    "{Verb} the {proj} {obj} on {env}",
    "{Verb} {proj} {obj} in {env} with {tool}",
    "Nightly {verb} of the {proj} {obj} ({env})",
    "{Verb} the {obj} for the {proj} team in {env}, then check it",
    "Routine: {verb} the {proj} {obj} before the {env} window",
    "{Verb} {obj} ({proj}, {env}) the usual way",
]


def procedure_specs(n: int, seed: int = 7) -> Iterator[tuple[str, str, str, list[str], list[str]]]:
    """(task_type, description, env, tags, commands): realistic-looking, varied, reproducible."""
    rng = random.Random(seed)
    verbs, objects = list(VERBS), list(OBJECTS)
    for _ in range(n):
        verb, obj = rng.choice(verbs), rng.choice(objects)
        domain = OBJECTS[obj][0]
        proj, env = rng.choice(PROJECTS), rng.choice(ENVS)
        pool = COMMANDS[domain] + (COMMANDS["git"][:2] if domain != "git" else COMMANDS["files"][:2])
        k = rng.randint(2, 6)
        picks = sorted(rng.sample(range(len(pool)), k))
        values = {
            "p": proj,
            "env": env,
            "v": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}",
            "n": rng.randint(1, 30),
            "d": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "h": f"{rng.getrandbits(28):07x}",
        }
        commands = [pool[j].format(**values) for j in picks]
        tool = commands[-1].split()[0]
        template = rng.choice(DESCRIPTIONS)
        obj_words = obj.replace("-", " ")
        description = template.format(Verb=verb.capitalize(), verb=verb, proj=proj, obj=obj_words, env=env, tool=tool)
        yield f"{verb}-{obj}", description, env, [domain, env, proj], commands


def make_queries(
    specs: list[tuple[str, str, str, list[str], list[str]]], count: int, seed: int = 11
) -> list[tuple[str, str]]:
    """(query, expected task type): paraphrases of stored procedures (synonyms for verb and object)
    and short keyword asks."""
    rng = random.Random(seed)
    queries = []
    for i in range(count):
        task_type, _, env, tags, _ = rng.choice(specs)
        verb, obj = task_type.split("-", 1)
        proj = tags[2]
        vs = rng.choice(VERBS[verb] + [verb])
        os_ = rng.choice(OBJECTS[obj][1] + [obj.replace("-", " ")])
        kind = i % 5
        if kind == 0:
            q = f"{vs} the {proj} {os_} in {env}"
        elif kind == 1:
            q = f"please {vs} our {os_} for {proj} on {env}"
        elif kind == 2:
            q = f"how do I {vs} the {os_}"
        elif kind == 3:
            q = f"{proj} {os_} {vs} {env}"
        else:
            q = f"we need to {vs} {proj}'s {os_} before the {env} release, same as last time"
        queries.append((q, task_type))
    return queries


class SplitEmbedder:
    """Bench-only: hashing vectors (384-d) for the bulk index; MiniLM for queries once `query_mode` is set.

    It carries the hashing embedder's name, so the companion treats the index it filled as fresh in both modes.
    With `query_mode` on, query and document vectors live in different spaces and rankings are meaningless; what it
    measures is the real query-time cost (MiniLM query embedding + chromadb HNSW over N 384-d vectors) without
    30+ minutes of MiniLM bulk embedding.
    """

    semantic = False
    dim = 384

    def __init__(self) -> None:
        from seams import HashingEmbedder, MiniLMEmbedder

        self.bulk = HashingEmbedder(384)
        self.name = self.bulk.name
        self.query = MiniLMEmbedder()
        self.query_mode = False

    def embed(self, texts: list[str]) -> list[list[float]]:
        return (self.query if self.query_mode else self.bulk).embed(texts)


def _procedure(spec: tuple[str, str, str, list[str], list[str]]) -> Any:
    from seams import CapturedProcedure, ProcedureStep

    task_type, description, _, tags, commands = spec
    return CapturedProcedure(
        id="",
        task_type=task_type,
        description=description,
        tags=tags,
        success_count=3,
        source="session",
        steps=[ProcedureStep(command=c) for c in commands],
    )


def fill_store(
    path: Path, specs: list[tuple[str, str, str, list[str], list[str]]], batch: int = 1000
) -> tuple[Any, float]:
    """Bulk set-up through the public `ProcedureDatabase.add_procedure`,
    `batch` calls per transaction (its re-entrant `_write`)."""
    from seams import ProcedureDatabase

    store = ProcedureDatabase(path=path)
    t0 = perf_counter()
    for start in range(0, len(specs), batch):
        chunk = specs[start : start + batch]

        def fill(conn: Any, chunk: list[Any] = chunk) -> None:
            for spec in chunk:
                store.add_procedure(_procedure(spec))  # joins this transaction: one COMMIT per batch

        store.db.transaction(fill)
    return store, perf_counter() - t0


def add_cost(store: Any, specs: list[tuple[str, str, str, list[str], list[str]]], k: int = 20) -> float:
    """ms per public `add_procedure` (its own transaction, as capture does)
    on a store of this size; adds k procedures."""
    times = []
    for spec in specs[:k]:
        t0 = perf_counter()
        store.add_procedure(_procedure(spec))
        times.append((perf_counter() - t0) * 1e3)
    return med(times)


def time_matches(matcher: Any, queries: list[tuple[str, str]], rounds: int, warm: int = 20) -> dict[str, Any]:
    """p50/p95 of warm `match` calls, and how often the expected task type is in the top 5 / first."""
    for q, _ in queries[-warm:]:
        matcher.match(q)
    samples: list[float] = []
    round_p50 = []
    top1 = top5 = 0
    for r in range(rounds):
        these = []
        for q, expected in queries:
            t0 = perf_counter()
            result = matcher.match(q)
            these.append((perf_counter() - t0) * 1e3)
            if r == 0:
                types = [c.task_type for c in result.candidates]
                top1 += bool(types) and types[0] == expected
                top5 += expected in types
        samples += these
        round_p50.append(med(these))
    return {
        "p50": med(samples),
        "p95": pct(samples, 95),
        "mean": statistics.fmean(samples),
        "samples": len(samples),
        "round_p50": round_p50,
        "top1": top1 / len(queries),
        "top5": top5 / len(queries),
        "mode": result.mode,
    }


def match_phases(matcher: Any, queries: list[tuple[str, str]]) -> dict[str, Any]:
    from seams import Companion, ProcedureDatabase
    from seams import matcher as matcher_mod

    timer = PhaseTimer()
    timer.wrap(matcher_mod.Matcher, "match", "Matcher.match (total)")
    timer.wrap(ProcedureDatabase, "generation", "store.generation() (cache check)")
    timer.wrap(lexicon_class(), "search", "key terms: Aho-Corasick pass + scoring postings")
    timer.wrap(Companion, "query", "Companion.query (semantic, all)")
    timer.wrap(Companion, "_require", "  chromadb get_collection + staleness check")
    timer.wrap(Companion, "_embed", "  query embedding")
    timer.wrap(ProcedureDatabase, "fts_search", "FTS5 search (fallback only)")
    timer.wrap(ProcedureDatabase, "get", "store.get per candidate (SQLite row + pydantic)")
    try:
        for q, _ in queries:
            matcher.match(q)
    finally:
        timer.restore()
    n = len(queries)
    return {k: {"ms": v / n * 1e3, "calls": timer.calls[k] / n} for k, v in timer.total.items()}


_AUTOMATON_CHILD = """
import gc, json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from skills_bench import rss_mib
from skills_bench import build_terms
from seams import ProcedureDatabase
store = ProcedureDatabase(path=Path(sys.argv[1]))
store.count()
gc.collect()
before = rss_mib()
t0 = time.perf_counter()
a = build_terms(store, False)
build = time.perf_counter() - t0
gc.collect()
after = rss_mib()
if hasattr(a, "postings"):  # the IDF term index: a dict of numpy postings, no automaton
    print(json.dumps({"build_s": build, "rss_delta_mib": after - before, "words": len(a.postings), "nodes": 0,
                      "c_size_mib": 0.0,
                      "postings": int(sum(len(v) for v in a.postings.values()))}))
else:
    stats = a.automaton.get_stats()
    postings = sum(len(v[1]) for _, v in a.automaton.items())
    print(json.dumps({"build_s": build, "rss_delta_mib": after - before, "words": stats["words_count"],
                      "nodes": stats["nodes_count"],
                      "c_size_mib": stats["total_size"] / 2**20, "postings": postings}))
"""


def automaton_build(store: Any, repeats: int) -> dict[str, Any]:
    """Build time and memory of the automaton, each build in a fresh interpreter (RSS growth is
    then the automaton's)."""
    runs = []
    for _ in range(repeats):
        proc = subprocess.run(
            [sys.executable, "-c", _AUTOMATON_CHILD, str(store.path), str(HERE)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise SystemExit(f"automaton child failed: {proc.stderr[-1000:]}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    out = dict(runs[0])
    out["build_s"] = med([r["build_s"] for r in runs])
    out["builds"] = [round(r["build_s"], 2) for r in runs]
    out["rss_delta_mib"] = med([r["rss_delta_mib"] for r in runs])
    return out


def lexical_only(
    store: Any, tmp: Path, queries: list[tuple[str, str]], rounds: int, warm: int, n_phase: int
) -> dict[str, Any]:
    """The companion is unavailable (its collection is missing): FTS5 + the automaton, flagged in the result."""
    from seams import HashingEmbedder, Matcher

    empty = tmp / f"companion-empty-{store.count()}"
    matcher = Matcher(store, empty, embedder=HashingEmbedder(384))
    probe = matcher.match(queries[0][0])
    if probe.mode != "lexical" or not probe.degraded:
        raise SystemExit(f"lexical fallback not taken: {probe.mode}")
    result = time_matches(matcher, queries, rounds, warm)
    result["phases"] = match_phases(matcher, queries[:n_phase])
    return result


def bench_match(quick: bool) -> dict[str, Any]:
    from seams import HashingEmbedder, Matcher, MiniLMEmbedder

    quiet_logs()
    small, large = (100, 400) if quick else (10_000, 100_000)
    minilm_n = 100 if quick else 10_000
    n_queries = 10 if quick else 200
    rounds = 1 if quick else 2
    tmp = Path(tempfile.mkdtemp(prefix="sherpa-bench-match-"))
    out: dict[str, Any] = {"sizes": [small, large], "minilm_n": minilm_n, "queries": n_queries, "rounds": rounds}
    try:
        t0 = perf_counter()
        specs = list(procedure_specs(large))
        out["generate_s"] = perf_counter() - t0
        out["task_types"] = len({s[0] for s in specs})
        out["avg_steps"] = statistics.fmean(len(s[4]) for s in specs)
        queries = make_queries(specs[:small], n_queries)
        out["sample_queries"] = [q for q, _ in queries[:5]]
        out["sample_procedure"] = {
            "task_type": specs[0][0],
            "description": specs[0][1],
            "tags": specs[0][3],
            "steps": specs[0][4],
        }

        stores = {}
        for n in (small, large):
            store, fill_s = fill_store(tmp / f"store-{n}.db", specs[:n])
            stores[n] = store
            out[f"fill_{n}_s"] = fill_s
            print(f"  filled {n:,} in {fill_s:.0f} s", file=sys.stderr)
        extra = list(procedure_specs(60, seed=99))

        # (kind, size, label, embedder factory); at the large size one index serves `hashing` then `split`.
        configs: list[tuple[str, int, str, Callable[[], Any]]] = [
            ("minilm", small, "MiniLM (default) for documents and queries", MiniLMEmbedder),
            (
                "hashing",
                small,
                "hashing 384-d (flagged fallback) for documents and queries",
                lambda: HashingEmbedder(384),
            ),
            ("hashing", large, "hashing 384-d (flagged fallback) for documents and queries", SplitEmbedder),
        ]
        results = []
        for kind, n, label, factory in configs:
            store = stores[n]
            embedder = factory()
            plan = {
                "rounds": rounds if n == small else 1,
                "warm": 20 if n == small else 10,
                "phase": 60 if n == small else 30,
            }
            index_dir = tmp / f"index-{kind}-{n}"
            matcher = Matcher(store, index_dir, embedder=embedder)
            gc.collect()
            t0 = perf_counter()
            indexed = matcher.reindex()
            index_s = perf_counter() - t0
            modes = [(kind, label)]
            if isinstance(embedder, SplitEmbedder):
                modes.append(("split", "hashing 384-d documents, MiniLM queries (timing only; rankings meaningless)"))
            for mode, mode_label in modes:
                if mode == "split":
                    embedder.query_mode = True
                row: dict[str, Any] = {
                    "kind": mode,
                    "n": n,
                    "label": mode_label,
                    "index_s": index_s,
                    "indexed": indexed,
                    "rounds": plan["rounds"],
                    "warm": plan["warm"],
                }
                t0 = perf_counter()
                matcher.match(queries[0][0])  # first call: automaton build (once per Matcher) + companion warm-up
                row["first_match_s"] = None if mode == "split" else perf_counter() - t0  # split reuses the warm Matcher
                row.update(time_matches(matcher, queries, plan["rounds"], plan["warm"]))
                row["phases"] = match_phases(matcher, queries[: plan["phase"]])
                # What replay_actions.skill_match does per replay: a new Matcher (its automaton cache starts empty).
                cold = []
                for q, _ in queries[: 3 if n == small else 1]:
                    fresh = Matcher(store, index_dir, embedder=embedder)
                    t0 = perf_counter()
                    fresh.match(q)
                    cold.append((perf_counter() - t0) * 1e3)
                row["cold_match_ms"] = med(cold)
                results.append(row)
                print(
                    f"  match {mode} n={n}: index {index_s:.1f}s, p50 {row['p50']:.1f} ms, p95 {row['p95']:.1f} ms,"
                    f" top5 {row['top5']:.0%}, cold {row['cold_match_ms']:.0f} ms",
                    file=sys.stderr,
                )
        out["configs"] = results
        out["automaton"] = {n: automaton_build(stores[n], 1 if quick else 3) for n in (small, large)}
        out["lexical"] = {}
        for n in (small, large):
            out["lexical"][n] = lexical_only(
                stores[n], tmp, queries, rounds if n == small else 1, 20 if n == small else 10, 60 if n == small else 30
            )
            print(f"  lexical n={n}: p50 {out['lexical'][n]['p50']:.1f} ms", file=sys.stderr)
        # Last, since it adds procedures: what one capture's add_procedure costs at each size (public class).
        from seams import ProcedureDatabase

        empty = ProcedureDatabase(path=tmp / "empty.db")
        out["add_procedure_ms"] = {
            0: add_cost(empty, extra[:20]),
            small: add_cost(stores[small], extra[20:40]),
            large: add_cost(stores[large], extra[40:60]),
        }
        empty.close()
        for s in stores.values():
            s.close()
        out["minilm_query_ms"] = minilm_query_cost(queries)
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def minilm_query_cost(queries: list[tuple[str, str]]) -> float:
    from seams import MiniLMEmbedder

    e = MiniLMEmbedder()
    e.embed(["warm up"])
    times = []
    for q, _ in queries[:100]:
        t0 = perf_counter()
        e.embed([q])
        times.append((perf_counter() - t0) * 1e3)
    return med(times)


# ============================================================================================== report


def machine_info() -> dict[str, str]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    uname = subprocess.run(["uname", "-srm"], capture_output=True, text=True).stdout.strip()
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "sherpa_skills", "statemachines"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout.strip()
    from importlib.metadata import version

    versions = ", ".join(f"{p} {version(p)}" for p in ("chromadb", "pyahocorasick", "onnxruntime", "transitions"))
    return {
        "uname": uname,
        "nproc": nproc,
        "cpu": cpu,
        "python": platform.python_version(),
        "versions": versions,
        "code": f"git {head}" + (" + uncommitted changes in sherpa_skills/ or statemachines/" if dirty else ""),
        "load": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def mark(ok: bool) -> str:
    return "met" if ok else "**missed**"


def section_example(e: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    p, r = e["planned"], e["replayed"]
    return [
        "### 1. The example task: planned run vs replayed run",
        "",
        f"Measured {meta['date']} on {meta['machine']}; command `{e['command']}` ({e['runs']} run(s), "
        f"wall {', '.join(map(str, e['wall_s']))} s each;"
        f" figures identical across runs: {'yes' if e['deterministic'] else 'NO'}). "
        "The LLM is the scripted stand-in (litellm custom provider); its token counts are the ones it reports.",
        "",
        "| run | final state | LLM calls | tokens |",
        "|---|---|---:|---:|",
        f"| planned (nothing stored yet; plan → capture) | {p['state']} | {p['llm_calls']} | {p['tokens']} |",
        f"| replayed (same task, procedure matched and replayed) | {r['state']} (replay {r['replay']}) "
        f"| {r['llm_calls']} | {r['tokens']} |",
        f"| environment changed: replay diverges at step {e['replanned']['diverged_step']}, "
        f"re-planned | {e['replanned']['state']} | {e['replanned']['llm_calls']} | {e['replanned']['tokens']} |",
        f"| replayed version 2 | {e['replayed_v2']['state']} (replay {e['replayed_v2']['replay']}) "
        f"| {e['replayed_v2']['llm_calls']} | — |",
        "",
        f"Token saving on replay: **{e['token_saving']:.1%}**; `learn stats` afterwards: "
        f"{e['stats']['replays']} replays,"
        f" {e['stats']['tokens_saved']} tokens and {e['stats']['llm_calls_saved']} LLM calls saved.",
        "",
    ]


def section_replay(r: dict[str, Any], meta: dict[str, Any]) -> tuple[list[str], list[str]]:
    ms = r["ms"]
    per = {
        k: v / (LONG if k.endswith(str(LONG)) else 10 if k.endswith("10") else 2 if k.endswith("2") else 1)
        for k, v in ms.items()
    }

    def marginal(a: str, b: str) -> float:
        return (ms[a] - ms[b]) / 8

    bash_marg = marginal("bash10", "bash2")
    rows = [
        ("`bash script.sh`, 10 commands, one bash for all (**baseline**)", "bash10", "bash2"),
        ("one `/bin/sh -c` per step from Python `subprocess.run` (process-per-step floor)", "sh10", "sh2"),
        ("library step runner alone (`runtime.run_step` → `shell` action → validation)", "step10", "step2"),
        ("**replay machine, procedure given by id** (no matching)", "replay_id10", "replay_id2"),
        ("**replay machine with matching** (query → Matcher: MiniLM + chromadb + automaton)", "replay_query10", None),
    ]
    lines = [
        "### 2. Replay overhead per shell step vs a bare shell script",
        "",
        f"Measured {meta['date']} on {meta['machine']}; command `{meta['command']}`; "
        f"{r['reps']} timed repeats per configuration after one"
        " warm-up each, configurations interleaved round-robin (rotated each repeat); medians.",
        "Procedure: 10 cheap real steps run in a temp work folder "
        f"({'; '.join('`' + s + '`' for s in r['steps'])}), captured with"
        " `learn capture-success bench-scratch-10 --steps-file steps10.json`; "
        "a 2-step procedure (the first two steps) is captured"
        " the same way for marginal figures. Replays run in-process as `cli_learn.cmd_replay` does "
        "(`load_workflow(statemachines/replay.yaml)`"
        " once, then per replay `workflow.agent(store=RunStore(home=home), home=home).run({... execute: true, "
        "assume_yes: true, cwd})`, with"
        " the CLI's logging set-up: console at error + the home's JSON log file); "
        "timed from agent creation to the final state."
        f" Bare script = `{r['bash']} script.sh` (`set -e` + the same commands) via `subprocess.run`; "
        f"the replay's shell is /bin/sh → {r['sh']}."
        ' "Marginal per step" = (10-step − 2-step) / 8, so fixed costs (interpreter start, matching, '
        "run creation, recording) cancel.",
        "",
        "| configuration | 10 steps ms | per step ms (10-step ÷ 10) "
        "| marginal per step ms | × bash per step | × bash marginal | × `sh -c` floor marginal |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    sh_marg = marginal("sh10", "sh2")
    for label, k10, k2 in rows:
        m = marginal(k10, k2) if k2 else float("nan")
        m_text = f"{m:.2f}" if k2 else "—"
        ratio_m = f"{m / bash_marg:.1f}×" if k2 else "—"
        ratio_sh = f"{m / sh_marg:.2f}×" if k2 else "—"
        lines.append(
            f"| {label} | {ms[k10]:.1f} | {per[k10]:.2f} | {m_text} | {per[k10] / per['bash10']:.1f}× | "
            f"{ratio_m} | {ratio_sh} |"
        )
    lines += [
        f"| (`bash` with an empty script: interpreter start alone) | {ms['bash0']:.1f} | — | — | — | — | — |",
        "",
        "Spread (min–max ms over the repeats): "
        + "; ".join(f"{k} {a:.1f}–{b:.1f}" for k, (a, b) in r["spread"].items()),
        "",
    ]
    if f"replay_id{LONG}" in ms:
        long_r = (ms[f"replay_id{LONG}"] - ms["replay_id10"]) / (LONG - 10)
        long_b = (ms[f"bash{LONG}"] - ms["bash10"]) / (LONG - 10)
        lines += [
            f"Length: a {LONG}-step procedure (the ten steps five times) by id took {ms[f'replay_id{LONG}']:.1f} ms"
            f" ({per[f'replay_id{LONG}']:.2f} ms/step; bash {per[f'bash{LONG}']:.2f} ms/step, "
            f"{per[f'replay_id{LONG}'] / per[f'bash{LONG}']:.1f}×);"
            f" marginal per step between 10 and {LONG} steps: "
            f"replay {long_r:.2f} ms vs 2→10 steps {marginal('replay_id10', 'replay_id2'):.2f} ms"
            f" (bash {long_b:.2f} vs {bash_marg:.2f} ms): a marginal that grows with length would mean each "
            "step costs more than"
            " the one before (as when every step re-wrote the whole growing `step_results` list into "
            "the run store, before commit b573a43).",
            "",
        ]
    # where the time goes
    for key, title in (("replay_query10", "with matching"), ("replay_id10", "by id")):
        ph = r["phases"][key]
        total = ph["total_ms"]
        lines += [
            f"Where a 10-step replay's time goes ({title}; separate pass with perf_counter wrappers, "
            f"mean of repeats, total {total:.1f} ms; nested rows indented by their prefix, calls = per replay):",
            "",
            "| phase | ms per replay | share | calls |",
            "|---|---:|---:|---:|",
        ]
        for name, v in sorted(ph["phases"].items(), key=lambda kv: -kv[1]["ms"]):
            lines.append(f"| {name} | {v['ms']:.2f} | {v['ms'] / total:.0%} | {v['calls']:.0f} |")
        top = (
            "action skill_match",
            "action skill_select",
            "action skill_preflight",
            "action skill_run_step",
            "action skill_postconditions",
            "action skill_record",
            "sqlite: RunStore.create_run",
            "sqlite: RunStore.commit_tick",
            "sqlite: RunStore.mark_started",
        )
        covered = sum(ph["phases"].get(k, {"ms": 0.0})["ms"] for k in top)
        lines += [
            "| engine and the rest (total − actions − run-store writes) "
            f"| {total - covered:.2f} | {(total - covered) / total:.0%} | — |",
            "",
        ]
    g = r["growth"]
    lines += [
        f"History: with {g['executions_before']} executions of the procedure a by-id 10-step replay took "
        f"{g['replay_ms_before']:.1f} ms;"
        f" after {g['extra']:,} more executions were recorded it took {g['replay_ms_after']:.1f} ms"
        f" ({g['replay_ms_after'] / g['replay_ms_before']:.2f}×). For scale: "
        f"`store.executions(id)` listing all {g['executions_after']:,}"
        f" takes {g['executions_list_ms']:.1f} ms (`skill_select` did that on every replay to count past "
        f"successes before commit b573a43; it now runs a COUNT), `health()` {g['health_ms']:.1f} ms.",
        "",
        "cProfile, by-id 10-step replay (own time per replay, profiler-inflated; top 15):",
        "",
        "| function | own ms | cumulative ms | calls |",
        "|---|---:|---:|---:|",
    ]
    for name, tt, ct, nc in r["profile"]:
        lines.append(f"| `{name}` | {tt:.2f} | {ct:.2f} | {nc} |")
    lines.append("")
    ratio_total = per["replay_id10"] / per["bash10"]
    ratio_marg = marginal("replay_id10", "replay_id2") / bash_marg
    ratio_q = per["replay_query10"] / per["bash10"]
    verdicts = [
        f"Replay overhead ≤ {TARGET_REPLAY_RATIO}× a bare shell script per step — "
        f"{'met' if ratio_total <= TARGET_REPLAY_RATIO else 'MISSED'}:"
        f" {ratio_q:.1f}× with matching, {ratio_total:.1f}× by id (bash's start-up included: "
        f"{per['bash10']:.2f} ms/step for bash vs"
        f" {per['replay_id10']:.2f} by id); marginal per step {ratio_marg:.1f}× "
        f"({marginal('replay_id10', 'replay_id2'):.2f} vs {bash_marg:.2f} ms)."
    ]
    return lines, verdicts


def _by_size(d: dict[str, Any], n: int) -> Any:
    return d[str(n)] if str(n) in d else d[n]


def section_match(m: dict[str, Any], meta: dict[str, Any]) -> tuple[list[str], list[str]]:
    small, large = m["sizes"]
    minilm = next((c for c in m["configs"] if c["kind"] == "minilm"), None)
    extrapolated = minilm["index_s"] * large / small / 60 if minilm else float("nan")
    lines = [
        f"### 3. `Matcher.match` over {small:,} and {large:,} stored procedures",
        "",
        f"Measured {meta['date']} on {meta['machine']}; command `{meta['command']}`.",
        f"Procedures: generated, reproducible (seed 7): task type = verb-object from {len(VERBS)} verbs × "
        f"{len(OBJECTS)} objects"
        f" ({m['task_types']} distinct task types), description from 6 templates with one of {len(PROJECTS)} "
        f"projects and {len(ENVS)}"
        f" environments, tags [domain, env, project], 2-6 commands (mean {m['avg_steps']:.1f}) "
        "drawn in order from realistic per-domain"
        " pools (kubectl/helm/docker, pip/pytest/ruff, npm, cargo, go, pg_dump/psql/redis-cli, tar/rsync, "
        "terraform/aws, nginx/certbot,"
        f" dvc, git). Example: `{json.dumps(m['sample_procedure'])}`. "
        f"The {small:,} store is the first {small:,} of the {large:,}.",
        "Stored through the public `ProcedureDatabase.add_procedure` (SQLite + FTS5), "
        f"1,000 calls per transaction ({small:,}:"
        f" {m[f'fill_{small}_s']:.0f} s, {large:,}: {m[f'fill_{large}_s']:.0f} s). "
        "Companion filled by `Matcher.reindex()` (the `learn reindex` path).",
        f"Queries: {m['queries']} varied asks built from stored procedures with synonyms for verb and object (e.g."
        f" {'; '.join('`' + q + '`' for q in m['sample_queries'][:4])}); warm-up calls first (20 at {small:,}, "
        f"10 at {large:,}), then"
        f" {m['rounds']} round(s) of all queries at {small:,} and 1 round at {large:,} (a match there takes "
        "seconds), on a warm Matcher"
        " (automaton built, chromadb open, model loaded). top-5 = the expected task type is among the 5 "
        "returned (a sanity check of ranking, not a quality benchmark).",
        f"Embedding with MiniLM: {small:,} procedure texts took "
        f"{minilm['index_s'] if minilm else float('nan'):.0f} s here, so {large:,}"
        f" would take about {extrapolated:.0f} min, over the ~10 min budget. "
        f"MiniLM is therefore measured end to end at {small:,}; at"
        f" {large:,} the documents are embedded with the hashing embedder (384-d, MiniLM's dimension), "
        "queried once with hashing"
        " queries (a consistent, complete pipeline: `hashing`) "
        "and once with MiniLM query vectors against those documents (`split`, a"
        " bench-only embedder: the true query-time cost of the default embedder over an HNSW index of that "
        "size; its rankings are meaningless).",
        "",
        "| procedures | embedder | index (reindex) s | first match s (automaton build) "
        "| p50 ms | p95 ms | mean ms | round p50s | top-5 | cold match ms (new Matcher, as each replay does) |",
        "|---:|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for c in m["configs"]:
        top5 = "—" if c["kind"] == "split" else f"{c['top5']:.0%}"
        lines.append(
            f"| {c['n']:,} | {c['label']} | {c['index_s']:.0f} | "
            f"{'—' if c['first_match_s'] is None else format(c['first_match_s'], '.2f')} | "
            f"**{c['p50']:.1f}** | {c['p95']:.1f} |"
            f" {c['mean']:.1f} | {', '.join(f'{x:.1f}' for x in c['round_p50'])} | {top5} | {c['cold_match_ms']:,.0f} |"
        )
    for n in (small, large):
        lx = _by_size(m["lexical"], n)
        lines.append(
            f"| {n:,} | none: companion unavailable → lexical (FTS5 + automaton), flagged | — | — "
            f"| **{lx['p50']:.1f}** |"
            f" {lx['p95']:.1f} | {lx['mean']:.1f} | {', '.join(f'{x:.1f}' for x in lx['round_p50'])} | "
            f"{lx['top5']:.0%} | — |"
        )
    lines += [
        "",
        f"MiniLM query embedding alone (one short query, 2 threads, median of 100): {m['minilm_query_ms']:.1f} ms.",
        "",
    ]
    lines += [
        "Automaton (a one-time cost per store generation: `Matcher._lexical` rebuilds it on the first match "
        "after a change; each build here in a fresh interpreter, so RSS growth is the automaton and its postings):",
        "",
        "| procedures | build s (median) | builds s | key terms | (term, procedure) "
        "postings | trie nodes | pyahocorasick C size MiB | RSS growth MiB |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for n in (small, large):
        a = _by_size(m["automaton"], n)
        lines.append(
            f"| {n:,} | {a['build_s']:.2f} | {', '.join(map(str, a['builds']))} | {a['words']:,} | "
            f"{a['postings']:,} | {a['nodes']:,} | {a['c_size_mib']:.1f} | {a['rss_delta_mib']:.0f} |"
        )
    if "add_procedure_ms" in m:
        ap = m["add_procedure_ms"]
        grows = _by_size(ap, large) > 3 * max(_by_size(ap, 0), 0.05)
        lines += [
            "",
            "Capture at scale: one public `ProcedureDatabase.add_procedure` in its own transaction (what each "
            "capture pays; median of"
            f" 20) takes {_by_size(ap, 0):.2f} ms on an empty store, "
            f"{_by_size(ap, small):.2f} ms at {small:,} procedures and {_by_size(ap, large):.2f} ms at {large:,}"
            + (
                ": it grows with the store (before commit b573a43 `_index_fts` deleted the old FTS row by "
                "an UNINDEXED column, a full scan of the FTS table per capture)."
                if grows
                else " — flat in the store's size."
            ),
        ]
    lines += [
        "",
        "Where a warm match's time goes (perf_counter wrappers over the first 60 queries at"
        f" {small:,}, 30 at {large:,}; mean ms per match, and calls per match where more than one):",
        "",
    ]
    cols = [(f"{c['n']:,} {c['kind']}", c["phases"]) for c in m["configs"]]
    cols += [(f"{n:,} lexical", _by_size(m["lexical"], n)["phases"]) for n in (small, large)]
    names: list[str] = []
    for _, ph in cols:
        for k in ph:
            if k not in names:
                names.append(k)
    lines.append("| phase | " + " | ".join(c for c, _ in cols) + " |")
    lines.append("|---|" + "---:|" * len(cols))
    for k in names:
        cells = []
        for _, ph in cols:
            v = ph.get(k)
            cells.append(
                "—" if v is None else f"{v['ms']:.2f} ({v['calls']:.0f})" if v["calls"] >= 2 else f"{v['ms']:.2f}"
            )
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    get_key = "store.get per candidate (SQLite row + pydantic)"
    parts = (
        "store.generation() (cache check)",
        "key terms: Aho-Corasick pass + scoring postings",
        "Companion.query (semantic, all)",
        "FTS5 search (fallback only)",
        get_key,
    )
    rest = []
    for _, ph in cols:
        rest.append(f"{ph['Matcher.match (total)']['ms'] - sum(ph.get(k, {'ms': 0.0})['ms'] for k in parts):.2f}")
    lines.append(
        "| rest: scoring, Match objects, sort (total − the rows above it that are not indented) | "
        + " | ".join(rest)
        + " |"
    )
    cells = []
    for _, ph in cols:
        total = ph["Matcher.match (total)"]["ms"]
        g = ph.get(get_key, {"ms": 0.0, "calls": 0})
        per_get = g["ms"] / g["calls"] if g["calls"] else 0.0
        cells.append(f"{total - g['ms'] + 5 * per_get:.2f}")
    if any(ph.get(get_key, {"calls": 0})["calls"] > 10 for _, ph in cols):
        lines.append(
            "| *what-if: total − candidate fetches + 5 fetches (only the returned top 5 loaded)* | "
            + " | ".join(cells)
            + " |"
        )
    lines.append("")
    verdicts = []
    at_large = [c for c in m["configs"] if c["n"] == large]
    if at_large:
        split = next((c for c in at_large if c["kind"] == "split"), at_large[-1])
        hashing = next((c for c in at_large if c["kind"] == "hashing"), at_large[-1])
        ok = split["p50"] <= TARGET_MATCH_P50_MS
        verdicts.append(
            f"`match` p50 ≤ {TARGET_MATCH_P50_MS:.0f} ms at {large:,} procedures — {'met' if ok else 'MISSED'}:"
            f" {split['p50']:.1f} ms with MiniLM queries (split), {hashing['p50']:.1f} ms with the hashing embedder,"
            f" lexical-only fallback {_by_size(m['lexical'], large)['p50']:.1f} ms;"
            f" at {small:,}: "
            + ", ".join(f"{c['kind']} {c['p50']:.1f} ms" for c in m["configs"] if c["n"] == small)
            + f", lexical {_by_size(m['lexical'], small)['p50']:.1f} ms."
        )
    return lines, verdicts


def write_results(state: dict[str, Any], notes: str) -> str:
    parts, verdicts = [], []
    common = [
        SECTION,
        "",
        "Written by `python bench/skills_bench.py` (each part can be re-run alone with `--only "
        "example|replay|match`; the latest"
        " figures of every part are kept in `bench/skills_bench.json` and this section is rebuilt from them).",
        "",
    ]
    machines = {}
    for key in ("example", "replay", "match"):
        if key in state:
            m = state[key]["meta"]
            machines[key] = m
    if machines:
        seen = set()
        for key, m in machines.items():
            line = (
                f"- {key}: {m['date']}, `{m['uname']}`, nproc {m['nproc']}, {m['cpu']}, "
                f"Python {m['python']} ({m['versions']});"
                f" {m['code']}; load average at start {m['load']}; command `{m['command']}`"
            )
            if line not in seen:
                common.append(line)
                seen.add(line)
        common.append("")
    for key, builder in (("example", None), ("replay", section_replay), ("match", section_match)):
        if key not in state:
            continue
        m = dict(state[key]["meta"])
        m["machine"] = f"`{m['uname']}` ({m['nproc']} CPUs)"
        if key == "example":
            e = state[key]["data"]
            parts += section_example(e, m)
            verdicts.append(
                f"Example task: 0 LLM calls on replay — {'met' if e['met_calls'] else 'MISSED'} "
                f"({e['replayed']['llm_calls']});"
                f" ≥ {TARGET_TOKEN_SAVING:.0%} fewer tokens — {'met' if e['met_tokens'] else 'MISSED'}"
                f" ({e['token_saving']:.1%}: {e['replayed']['tokens']} vs {e['planned']['tokens']})"
            )
        else:
            lines, v = builder(state[key]["data"], m)
            parts += lines
            verdicts += v
    text = (
        "\n".join(
            common
            + parts
            + (["### Findings", "", notes.strip(), ""] if notes.strip() else [])
            + ["### Targets", ""]
            + [f"- {v}" for v in verdicts]
        )
        + "\n"
    )
    return text


def write_section(section: str) -> None:
    """Through the benches' shared helper (bench/harness.py) when it is there; the same logic otherwise."""
    try:
        sys.path.insert(0, str(HERE))
        from harness import write_section_text
    except ImportError:
        pass
    else:
        write_section_text(section)
        return
    if RESULTS.exists():
        text = RESULTS.read_text(encoding="utf-8")
    else:
        text = (
            "# Benchmark results\n\nMeasured figures from the scripts in `bench/`; "
            "each section is rewritten by its script.\n"
        )
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == SECTION), None)
    if start is None:
        body = text if text.endswith("\n") else text + "\n"
        RESULTS.write_text(body + "\n" + section, encoding="utf-8")
        return
    end = next(
        (j for j in range(start + 1, len(lines)) if lines[j].startswith("## ") or lines[j].startswith("# ")), len(lines)
    )
    tail = "".join(lines[end:])
    RESULTS.write_text("".join(lines[:start]) + section + ("\n" + tail if tail else ""), encoding="utf-8")


NOTES_FILE = HERE / "skills_bench_notes.md"


def main() -> int:
    parser = arguments(description=__doc__.split("\n")[0], quick="100/400 procedures, a repeat or two")
    parser.add_argument("--only", default="example,replay,match", help="comma-separated parts: example, replay, match")
    parser.add_argument(
        "--rebuild", action="store_true", help="measure nothing: rebuild the section from bench/skills_bench.json"
    )
    options = parse(parser)
    parts = [] if options.rebuild else [p.strip() for p in options.only.split(",") if p.strip()]
    unknown = set(parts) - {"example", "replay", "match"}
    if unknown:
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    command = (
        "python bench/skills_bench.py"
        + (" --quick" if options.quick else "")
        + (f" --only {','.join(parts)}" if parts != ["example", "replay", "match"] else "")
    )
    state: dict[str, Any] = json.loads(STATE.read_text()) if STATE.exists() else {}
    for part in parts:
        meta = machine_info()
        meta["command"] = command
        meta["quick"] = options.quick
        t0 = perf_counter()
        print(f"[{part}] running{' (quick)' if options.quick else ''}…", file=sys.stderr)
        data = {"example": bench_example, "replay": bench_replay, "match": bench_match}[part](options.quick)
        meta["wall_s"] = round(perf_counter() - t0, 1)
        print(f"[{part}] done in {meta['wall_s']} s", file=sys.stderr)
        state[part] = {"meta": meta, "data": json.loads(json.dumps(data, default=str))}
    notes = NOTES_FILE.read_text(encoding="utf-8") if NOTES_FILE.exists() else ""
    section = write_results(state, notes)
    if options.no_write:
        print(section)
    else:
        STATE.write_text(json.dumps(state, indent=1, default=str) + "\n", encoding="utf-8")
        write_section(section)
        print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
