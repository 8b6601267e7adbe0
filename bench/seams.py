"""The one place benches reach into sherpa_skills past its public face: each seam named, with why, found lazily."""

from __future__ import annotations

from importlib import import_module
from typing import Any

# name -> (module, attribute), each with why the public face (`sherpa_skills.__all__`, SkillStore, Workflow, RunStore,
# the CLI) does not serve. Resolved at the bench's own import line, as its direct import was, so a bench loads only
# what it uses, and a child that puts another checkout first on sys.path gets that checkout's code. When an internal
# moves, fix its line here; tests/bench/test_bench_smoke.py resolves every seam.
SEAMS: dict[str, tuple[str, str]] = {
    # -- the skill store's parts, below SkillStore (timed or filled alone; SkillStore grows a face for them later)
    "ProcedureDatabase": ("sherpa_skills.skills.store.database", "ProcedureDatabase"),  # filling 100k rows, no matcher
    "CapturedProcedure": ("sherpa_skills.skills.store.models", "CapturedProcedure"),  # a stored row made directly
    "ProcedureStep": ("sherpa_skills.skills.store.models", "ProcedureStep"),  # steps of those rows (a legacy 5 MB one)
    "CapturedLearning": ("sherpa_skills.skills.store.models", "CapturedLearning"),  # learnings written in bulk
    "replay_refusal": ("sherpa_skills.skills.store.scoring", "replay_refusal"),  # why a stored path would not replay
    "Database": ("sherpa_skills.db.database", "Database"),  # its transaction (every store's write) wrapped and timed
    "skill_store": ("sherpa_skills.skills.replay.runtime", "skill_store"),  # the per-home store the CLI/MCP use
    "run_step": ("sherpa_skills.skills.replay.runtime", "run_step"),  # the replay's step runner timed alone
    "runtime": ("sherpa_skills.skills.replay", "runtime"),  # module whose functions the phase timer wraps
    "ReplayPolicy": ("sherpa_skills.skills.replay.policy", "ReplayPolicy"),  # documented; a replay built by hand
    # -- matching, timed and calibrated by its parts (the relevance model, the term index, the verifier)
    "Matcher": ("sherpa_skills.skills.match.matcher", "Matcher"),  # an index built on a store made apart
    "matcher": ("sherpa_skills.skills.match", "matcher"),  # module whose Matcher.match the phase timer wraps
    "describe": ("sherpa_skills.skills.match.texts", "describe"),  # the text a procedure is indexed by
    "procedure_words": ("sherpa_skills.skills.match.texts", "procedure_words"),  # the key-term index's input
    "MARGIN": ("sherpa_skills.skills.match.models", "MARGIN"),  # named in the section beside the figures
    "RELEVANCE_FLOOR": ("sherpa_skills.skills.match.models", "RELEVANCE_FLOOR"),  # likewise
    "Snapshot": ("sherpa_skills.skills.match.procedure_index", "Snapshot"),  # the key-term index built cold
    "index_text": ("sherpa_skills.skills.match.procedure_index", "index_text"),  # texts embedded once, outside timing
    "FEATURES": ("sherpa_skills.skills.match.relevance", "FEATURES"),  # the relevance model refitted
    "MODEL_FILE": ("sherpa_skills.skills.match.relevance", "MODEL_FILE"),  # the shipped model match_calibrate rewrites
    "SETTINGS": ("sherpa_skills.skills.match.relevance", "SETTINGS"),  # what a refit keeps as shipped
    "default_model": ("sherpa_skills.skills.match.relevance", "default_model"),  # the shipped setting, varied
    "from_dict": ("sherpa_skills.skills.match.relevance", "from_dict"),  # a fitted setting tried held out
    "TermIndex": ("sherpa_skills.skills.match.similarity", "TermIndex"),  # the lexical view alone
    "words": ("sherpa_skills.skills.match.similarity", "words"),  # the lexical baselines' tokens
    "task_type_words": ("sherpa_skills.skills.match.similarity", "task_type_words"),  # likewise
    "FailureFinder": ("sherpa_skills.skills.match.failures", "FailureFinder"),  # the learnings' finder swept
    "FLOOR": ("sherpa_skills.skills.match.failures", "FLOOR"),  # its shipped floor, compared
    "TERMS_WEIGHT": ("sherpa_skills.skills.match.failures", "TERMS_WEIGHT"),  # its shipped weight, compared
    "learning_texts": ("sherpa_skills.skills.match.failures", "learning_texts"),  # what it embeds
    "learning_words": ("sherpa_skills.skills.match.failures", "learning_words"),  # what it counts
    "_PROC_GLOB": ("sherpa_skills.skills.match.literals", "_PROC_GLOB"),  # the pattern that hung, timed alone
    "Verifier": ("sherpa_skills.skills.match.verifier", "Verifier"),  # the judge given a scripted stand-in
    "by_person": ("sherpa_skills.skills.store.answers", "by_person"),  # whose answers the store's own floor counts
    # -- mining and the decision memory, measured below the heartbeat and the learning hook that call them
    "mine": ("sherpa_skills.skills.mine.mining", "mine"),
    "classify": ("sherpa_skills.skills.mine.shell_words", "classify"),
    "stages": ("sherpa_skills.skills.mine.shell_words", "stages"),
    "suggest_task_type": ("sherpa_skills.skills.mine.recurring", "suggest_task_type"),
    "Example": ("sherpa_skills.skills.decide.examples", "Example"),  # examples written without runs
    "add_examples": ("sherpa_skills.skills.decide.examples", "add_examples"),
    "DecisionMemory": ("sherpa_skills.skills.decide.memory", "DecisionMemory"),  # its answer() timed alone
    "StateMemory": ("sherpa_skills.skills.decide.memory", "StateMemory"),  # the head simulated offline
    "scorer": ("sherpa_skills.skills.decide.memory", "scorer"),
    "settings": ("sherpa_skills.skills.decide.memory", "settings"),
    "Calibration": ("sherpa_skills.skills.decide.head", "Calibration"),
    "Head": ("sherpa_skills.skills.decide.head", "Head"),  # its arrays scored over other labels (a sim variant)
    # -- meaning: the embedders and the companion index, chosen per bench (hashing where MiniLM would take minutes)
    "MiniLMEmbedder": ("sherpa_skills.semantic.embeddings", "MiniLMEmbedder"),
    "HashingEmbedder": ("sherpa_skills.semantic.embeddings", "HashingEmbedder"),
    "Companion": ("sherpa_skills.semantic.companion", "Companion"),
    "ToolIndex": ("sherpa_skills.semantic.tool_index", "ToolIndex"),  # the heartbeat's tool index, filled
    "ToolSpec": ("sherpa_skills.semantic.tool_index", "ToolSpec"),
    # -- memory, sessions, heartbeat: their stores filled and timed without the CLI around them
    "SharedMemory": ("sherpa_skills.memory", "SharedMemory"),
    "Domains": ("sherpa_skills.memory.domains", "Domains"),  # documented
    "briefing": ("sherpa_skills.memory.domains", "briefing"),  # documented
    "SessionStore": ("sherpa_skills.sessions", "SessionStore"),
    "import_paths": ("sherpa_skills.sessions", "import_paths"),
    "run_once": ("sherpa_skills.heartbeat.runner", "run_once"),  # one heartbeat, timed in-process
    "AgentService": ("sherpa_skills.agents.service", "AgentService"),  # one team member as its own process (Redis)
    # -- the engine's record, written as the engine writes it (runs of 3,000 steps made in seconds)
    "TickRecord": ("sherpa_skills.engine.runstore", "TickRecord"),
    "spec_hash": ("sherpa_skills.engine.run.identity", "spec_hash"),
    "machine_record": ("sherpa_skills.engine.run_record", "machine_record"),
    "fork_run": ("sherpa_skills.engine.fork", "fork_run"),  # documented; not in __all__
    "load_builtins": ("sherpa_skills.engine.registry", "load_builtins"),  # a registry with the bench's own actions
    "with_advisors": ("sherpa_skills.policy.advised", "with_advisors"),  # the replay in a policy chain, timed
    "scripted_model": ("sherpa_skills.testing", "scripted_model"),  # the offline model the engine bench drives
    "shell": ("sherpa_skills.actions", "shell"),  # the shell action the replay phase timer wraps
    # -- the view, the CLI, logging and data files
    "create_app": ("sherpa_skills.ui", "create_app"),  # the view served in-process (TestClient, uvicorn)
    "svg": ("sherpa_skills.ui", "svg"),  # the server-side diagram timed alone
    "highlighted_mermaid": ("sherpa_skills.ui.diagram", "highlighted_mermaid"),
    "run_summary": ("sherpa_skills.engine.run_json", "run_summary"),  # the run's --json shape
    "run_detail": ("sherpa_skills.engine.run_json", "run_detail"),
    "main": ("sherpa_skills.cli", "main"),  # the CLI in-process, where a subprocess's start-up would drown the figure
    "configure": ("sherpa_skills.logs", "configure"),  # documented; logs quiet while timing
    "data_file": ("sherpa_skills.data", "data_file"),  # a shipped workflow, found as the CLI finds it
    "load_yaml_text": ("sherpa_skills.yaml_source", "load_yaml_text"),  # the YAML loader apart from the workflow
}


def __getattr__(name: str) -> Any:
    """`from seams import X`: the attribute (or submodule) X of the module its seam names."""
    if name not in SEAMS:
        raise AttributeError(f"bench/seams.py names no seam {name!r}")
    module, attribute = SEAMS[name]
    owner = import_module(module)
    if not hasattr(owner, attribute):  # a submodule its package has not imported yet
        return import_module(f"{module}.{attribute}")
    return getattr(owner, attribute)
