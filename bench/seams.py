"""The one place benches reach into sherpa_skills past its public face: each seam named, with why, found lazily."""

from __future__ import annotations

from importlib import import_module
from typing import Any

# name -> (module, attribute). Resolved on first import, as the bench's own import line did, so a bench loads only
# what it uses and one that times its imports or picks a checkout on sys.path first still measures what it did.
SEAMS: dict[str, tuple[str, str]] = {
    "shell": ("sherpa_skills.actions", "shell"),
    "RedisBus": ("sherpa_skills.agents.redis_bus", "RedisBus"),
    "AgentService": ("sherpa_skills.agents.service", "AgentService"),
    "load_team": ("sherpa_skills.agents.team", "load_team"),
    "TeamRunner": ("sherpa_skills.agents.team", "TeamRunner"),
    "main": ("sherpa_skills.cli", "main"),
    "run_detail": ("sherpa_skills.cli.runs", "run_detail"),
    "run_summary": ("sherpa_skills.cli.runs", "run_summary"),
    "data_file": ("sherpa_skills.data", "data_file"),
    "Agent": ("sherpa_skills.engine.agent", "Agent"),
    "spec_hash": ("sherpa_skills.engine.agent", "spec_hash"),
    "LogEntry": ("sherpa_skills.engine.belief", "LogEntry"),
    "TrajectoryEntry": ("sherpa_skills.engine.belief", "TrajectoryEntry"),
    "Event": ("sherpa_skills.engine.events", "Event"),
    "fork_run": ("sherpa_skills.engine.fork", "fork_run"),
    "ActionResult": ("sherpa_skills.engine.registry", "ActionResult"),
    "default_registry": ("sherpa_skills.engine.registry", "default_registry"),
    "load_builtins": ("sherpa_skills.engine.registry", "load_builtins"),
    "machine_record": ("sherpa_skills.engine.run_record", "machine_record"),
    "RunStore": ("sherpa_skills.engine.runstore", "RunStore"),
    "TickRecord": ("sherpa_skills.engine.runstore", "TickRecord"),
    "load_workflow": ("sherpa_skills.engine.workflow", "load_workflow"),
    "load_workflow_text": ("sherpa_skills.engine.workflow", "load_workflow_text"),
    "Workflow": ("sherpa_skills.engine.workflow", "Workflow"),
    "run_once": ("sherpa_skills.heartbeat.runner", "run_once"),
    "configure": ("sherpa_skills.logs", "configure"),
    "_search": ("sherpa_skills.memory", "_search"),
    "SharedMemory": ("sherpa_skills.memory", "SharedMemory"),
    "briefing": ("sherpa_skills.memory.domains", "briefing"),
    "Domains": ("sherpa_skills.memory.domains", "Domains"),
    "LLMPolicy": ("sherpa_skills.policy.llm", "LLMPolicy"),
    "with_advisors": ("sherpa_skills.policy.advised", "with_advisors"),
    "Companion": ("sherpa_skills.semantic.companion", "Companion"),
    "HashingEmbedder": ("sherpa_skills.semantic.embeddings", "HashingEmbedder"),
    "MiniLMEmbedder": ("sherpa_skills.semantic.embeddings", "MiniLMEmbedder"),
    "ToolIndex": ("sherpa_skills.semantic.tool_index", "ToolIndex"),
    "ToolSpec": ("sherpa_skills.semantic.tool_index", "ToolSpec"),
    "import_paths": ("sherpa_skills.sessions", "import_paths"),
    "SessionStore": ("sherpa_skills.sessions", "SessionStore"),
    "SkillStore": ("sherpa_skills.skills.api", "SkillStore"),
    "Learner": ("sherpa_skills.skills.capture.learning", "Learner"),
    "add_examples": ("sherpa_skills.skills.decide.examples", "add_examples"),
    "Example": ("sherpa_skills.skills.decide.examples", "Example"),
    "Calibration": ("sherpa_skills.skills.decide.head", "Calibration"),
    "DecisionMemory": ("sherpa_skills.skills.decide.memory", "DecisionMemory"),
    "scorer": ("sherpa_skills.skills.decide.memory", "scorer"),
    "settings": ("sherpa_skills.skills.decide.memory", "settings"),
    "StateMemory": ("sherpa_skills.skills.decide.memory", "StateMemory"),
    "matcher": ("sherpa_skills.skills.match", "matcher"),
    "FailureFinder": ("sherpa_skills.skills.match.failures", "FailureFinder"),
    "FLOOR": ("sherpa_skills.skills.match.failures", "FLOOR"),
    "learning_texts": ("sherpa_skills.skills.match.failures", "learning_texts"),
    "learning_words": ("sherpa_skills.skills.match.failures", "learning_words"),
    "TERMS_WEIGHT": ("sherpa_skills.skills.match.failures", "TERMS_WEIGHT"),
    "_PROC_GLOB": ("sherpa_skills.skills.match.literals", "_PROC_GLOB"),
    "describe": ("sherpa_skills.skills.match.matcher", "describe"),
    "MARGIN": ("sherpa_skills.skills.match.matcher", "MARGIN"),
    "Matcher": ("sherpa_skills.skills.match.matcher", "Matcher"),
    "procedure_words": ("sherpa_skills.skills.match.matcher", "procedure_words"),
    "RELEVANCE_FLOOR": ("sherpa_skills.skills.match.matcher", "RELEVANCE_FLOOR"),
    "index_text": ("sherpa_skills.skills.match.procedure_index", "index_text"),
    "Snapshot": ("sherpa_skills.skills.match.procedure_index", "Snapshot"),
    "default_model": ("sherpa_skills.skills.match.relevance", "default_model"),
    "FEATURES": ("sherpa_skills.skills.match.relevance", "FEATURES"),
    "from_dict": ("sherpa_skills.skills.match.relevance", "from_dict"),
    "MODEL_FILE": ("sherpa_skills.skills.match.relevance", "MODEL_FILE"),
    "task_type_words": ("sherpa_skills.skills.match.similarity", "task_type_words"),
    "TermIndex": ("sherpa_skills.skills.match.similarity", "TermIndex"),
    "words": ("sherpa_skills.skills.match.similarity", "words"),
    "Verifier": ("sherpa_skills.skills.match.verifier", "Verifier"),
    "mine": ("sherpa_skills.skills.mine.mining", "mine"),
    "suggest_task_type": ("sherpa_skills.skills.mine.recurring", "suggest_task_type"),
    "classify": ("sherpa_skills.skills.mine.shell_words", "classify"),
    "stages": ("sherpa_skills.skills.mine.shell_words", "stages"),
    "runtime": ("sherpa_skills.skills.replay", "runtime"),
    "ReplayPolicy": ("sherpa_skills.skills.replay.policy", "ReplayPolicy"),
    "run_step": ("sherpa_skills.skills.replay.runtime", "run_step"),
    "skill_store": ("sherpa_skills.skills.replay.runtime", "skill_store"),
    "_Tx": ("sherpa_skills.skills.store.database", "_Tx"),
    "ProcedureDatabase": ("sherpa_skills.skills.store.database", "ProcedureDatabase"),
    "CapturedLearning": ("sherpa_skills.skills.store.models", "CapturedLearning"),
    "CapturedProcedure": ("sherpa_skills.skills.store.models", "CapturedProcedure"),
    "ProcedureStep": ("sherpa_skills.skills.store.models", "ProcedureStep"),
    "replay_refusal": ("sherpa_skills.skills.store.scoring", "replay_refusal"),
    "Transaction": ("sherpa_skills.sqlite_db", "Transaction"),
    "scripted_model": ("sherpa_skills.testing", "scripted_model"),
    "create_app": ("sherpa_skills.ui", "create_app"),
    "svg": ("sherpa_skills.ui", "svg"),
    "highlighted_mermaid": ("sherpa_skills.ui.diagram", "highlighted_mermaid"),
    "load_yaml_text": ("sherpa_skills.yaml_source", "load_yaml_text"),
}


def __getattr__(name: str) -> Any:
    """`from seams import X`: the attribute (or submodule) X of the module its seam names."""
    if name not in SEAMS:
        raise AttributeError(f"bench/seams.py names no seam {name!r}")
    module, attribute = SEAMS[name]
    owner = import_module(module)
    if not hasattr(owner, attribute):  # a submodule not yet imported by its package
        return import_module(f"{module}.{attribute}")
    return getattr(owner, attribute)
