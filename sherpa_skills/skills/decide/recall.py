"""The decision memory as a run's advisor: asked for each decision a replay did not take, it answers from the
workflow's past decisions or abstains; what each abstention saw is kept, so the LLM's decision there becomes an
example when the run succeeds. Guards and argument validation keep the last word: an answer whose trigger the guards
no longer offer, or whose arguments no longer validate, is a divergence told to the LLM, never taken."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import structlog

from ...engine.compiler import check_arguments
from ...policy.base import Decision, DecisionContext
from ..replay.divergence import Divergence
from ..replay.policy import fill
from .examples import Example
from .features import FeatureReader
from .memory import DecisionMemory, scorer

log = structlog.get_logger(__name__)

#: The procedure name a decision memory's divergence is reported under.
MEMORY = "decision memory"


class Recall:
    """One run's questions to its workflow's decision memory."""

    def __init__(
        self,
        memory: DecisionMemory,
        workflow: str,
        inputs: dict[str, Any],
        params: dict[str, Any],
        embed: Callable[[], tuple[Any, str | None]],
        bound: float | None = None,
    ):
        # One-word inputs as text, as the trajectory replay fills them: an order given as 4500 is the order "4500".
        self.memory, self.workflow, self.inputs = memory, workflow, {**inputs, **params}
        self._embed, self.bound = embed, bound
        #: What each answer stood on, by position: its state, score and the examples that taught it (evicted, and a
        #: wrong calibration point kept, if the answer is contradicted).
        self.answers: dict[int, dict[str, Any]] = {}
        self.vector: Any = None
        self.embedder: str | None = None
        self._embedded = False
        self.reader = FeatureReader(params)
        #: What each abstention saw, by decision position: the LLM's decision there is an example if the run succeeds.
        self.asked: dict[int, dict[str, Any]] = {}
        self.answered = 0
        #: The (parametrised) arguments of the decisions it took, by position: what the run's capture records.
        self.taken: dict[int, dict[str, Any]] = {}
        #: Milliseconds each answered decision took, the task's embedding left out (made once per run: `embed_ms`).
        self.answer_ms: list[float] = []
        self.embed_ms = 0.0
        self.abstained: list[str] = []

    def decide(self, ctx: DecisionContext) -> Decision | None:
        started, embedded = time.perf_counter(), self.embed_ms
        features, path = self.reader.read(ctx.view, ctx.triggers())
        position = self.reader.decisions
        answer = self.memory.answer(self.workflow, ctx.state, self.meaning, features, path, self.bound)
        example = answer.example
        if example is not None:
            refusal, args = self._fits(ctx, example)
            if refusal is None:
                self.answered += 1
                if answer.score is not None:
                    self.answers[position] = {"state": ctx.state, "score": answer.score, "teachers": answer.teachers}
                if example.args:
                    self.taken[position] = example.args
                self.answer_ms.append((time.perf_counter() - started) * 1000 - (self.embed_ms - embedded))
                return Decision(example.trigger, args, decided_by="replay", reason=f"{MEMORY}: {answer.why}", tokens=0)
            if answer.score is not None:
                # Its guards or arguments refused what the memory would answer: a contradiction, not a lesson.
                self.contradicted(ctx.state, answer.score, answer.teachers, refusal)
            if ctx.divergence is None:
                ctx.divergence = Divergence(
                    procedure=MEMORY,
                    step=position,
                    state=ctx.state,
                    replayed=self.answered,
                    expected=f"'{example.trigger}' ({answer.why})",
                    observed=refusal,
                    reason=f"the decision memory would take '{example.trigger}' in '{ctx.state}': {refusal}",
                ).record()
            why = refusal
        else:
            why = answer.why
        self.abstained.append(f"{ctx.state}: {why}")
        self.asked[position] = {"state": ctx.state, "features": features, "path": path}
        if answer.guess is not None and answer.score is not None:
            self.asked[position] |= {"guess": answer.guess, "score": answer.score}
        log.debug("decision_memory_abstained", state=ctx.state, why=why)
        return None

    def contradicted(self, state: str, score: float, teachers: list[int], why: str) -> None:
        """An answer (or one the memory would give) contradicted: a wrong calibration point, and what taught it
        forgotten, so a wrong lesson is not answered from again."""
        from .examples import add_error

        add_error(self.memory.store, self.workflow, state, score, why, scorer())
        evicted = self.memory.evict(self.workflow, teachers)
        self.memory.calibration(self.workflow)
        log.info("decision_memory_contradicted", state=state, why=why, evicted=evicted)

    def contradict_answers(self, why: str) -> int:
        """Every answer this run took, contradicted (the run failed after it): how many."""
        for seen in self.answers.values():
            self.contradicted(seen["state"], seen["score"], seen["teachers"], why)
        count, self.answers = len(self.answers), {}
        return count

    def position(self, ctx: DecisionContext) -> int:
        """The position of the decision asked now (policy decisions the run has taken)."""
        self.reader.catch_up(ctx.view)
        return self.reader.decisions

    def meaning(self) -> Any:
        """The task's embedding, made the first time meaning must decide (never, for a run the memory answers by
        values alone)."""
        if not self._embedded:
            self._embedded, started = True, time.perf_counter()
            self.vector, self.embedder = self._embed()
            self.embed_ms = (time.perf_counter() - started) * 1000
        return self.vector

    def _fits(self, ctx: DecisionContext, example: Example) -> tuple[str | None, dict[str, Any]]:
        edge = ctx.option(example.trigger)
        if edge is None:
            available = ", ".join(ctx.triggers()) or "none"
            return f"its guards do not pass now (available: {available})", {}
        args = fill(example.args, self.inputs) if example.args else {}
        if not edge.arguments:
            return None, {}
        try:
            return None, dict(check_arguments(edge, args))
        except ValueError as exc:
            return f"its arguments no longer validate: {exc}", {}

    async def adecide(self, ctx: DecisionContext) -> Decision | None:
        return self.decide(ctx)

    def restore_arguments(self, decisions: list[Any]) -> None:
        """The run's captured decisions with the arguments of those it took as they were recorded (parametrised):
        a replayed decision leaves no arguments in the run's log."""
        for position, args in self.taken.items():
            if (
                position < len(decisions)
                and decisions[position].decided_by == "replay"
                and not decisions[position].args
            ):
                decisions[position].args = dict(args)

    def examples(self, decisions: list[Any], task: str, run_id: str | None, tokens: int | None = None) -> list[Example]:
        """The run's LLM decisions where the memory abstained, as examples (`decisions` as captured)."""
        import numpy as np

        meaning = self.meaning() if self.asked else None
        vector = np.asarray(meaning, dtype=np.float32).tobytes() if meaning is not None else None
        out = []
        for position, seen in sorted(self.asked.items()):
            if position >= len(decisions):
                continue
            d = decisions[position]
            if d.decided_by != "llm" or d.state != seen["state"]:
                continue
            out.append(
                Example(
                    workflow=self.workflow,
                    state=d.state,
                    trigger=d.trigger,
                    args=dict(d.args),
                    features=seen["features"],
                    path=seen["path"],
                    task=task,
                    vector=vector,
                    embedder=self.embedder,
                    run_id=run_id,
                    score=seen.get("score"),
                    scorer=scorer() if seen.get("score") is not None else None,
                    hit=None if seen.get("guess") is None else seen["guess"] == _label(d.trigger, d.args),
                    tokens=tokens,
                )
            )
        return out


def _label(trigger: str, args: dict[str, Any]) -> str:
    return Example(workflow="", state="", trigger=trigger, args=dict(args), features={}, path="", task="").label
