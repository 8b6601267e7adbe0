"""How a match decides among a task's scored candidates (the matcher's second half; `matcher` scores them): the
sure one replayed, the plausible ones offered to the judge at hand, or nothing and why."""

from __future__ import annotations

from typing import Any, Literal

from ..store.database import ProcedureDatabase
from ..store.models import CapturedProcedure
from ..store.scoring import replay_refusal
from .exact import _described_alike
from .models import MatchCandidate, MatchDecision
from .relevance import RelevanceModel
from .verifier import MAX_OFFERED, Verifier


def _contrasted(said: str, described: str) -> str:
    if not said:
        return f"leaves out the description's {described!r}"
    if not described:
        return f"says {said!r}, which the description does not"
    return f"says {said!r} where the description says {described!r}"


class Deciding:
    """The deciding half of `Matcher`: reads the matcher's store, model, margin and parsed procedures."""

    store: ProcedureDatabase
    model: RelevanceModel
    margin: float
    _procs: dict[str, CapturedProcedure]

    def _text(self, proc: CapturedProcedure) -> Any:
        raise NotImplementedError

    def _decide(
        self,
        base: dict[str, Any],
        candidates: list[MatchCandidate],
        given: dict[str, Any],
        threshold: float | None,
        check_health: bool,
        mode: Literal["semantic", "lexical"],
        degraded: str | None,
        *,
        verify: Verifier | None = None,
        rejected: set[str] | None = None,
        vouch: MatchCandidate | None = None,
    ) -> MatchDecision:
        floor = base["floor"]
        refused = rejected or set()
        for c in candidates:
            if c.procedure_id in refused:
                c.reason = "a judge said this wording is not about it (`learn aliases` lists the rejection)"
            elif c.literals_disagreed:
                c.reason = f"literals disagree: {'; '.join(c.literals_disagreed)}"
            elif c.semantic is None:
                c.reason = "no semantic score (meaning unavailable): not replayed on key terms alone"
            elif c.contrast:
                c.reason = (
                    f"{_contrasted(*c.contrast)}: a near twin asking the opposite work is asked about, never replayed"
                )
            elif c.score < floor:
                c.reason = f"below relevance floor {floor:g} ({c.score:.2f})"
        plausible = [
            c
            for c in candidates
            if c.procedure_id not in refused and not c.literals_disagreed and c.semantic is not None
        ]
        contenders = [c for c in candidates if c.reason is None]
        decision = MatchDecision(**base, decision="no-match", candidates=candidates, mode=mode, degraded=degraded)
        if contenders:
            best = contenders[0]
            close = [c for c in contenders[1:] if best.score - c.score < self.margin]
            # Procedures described alike: which one the task means is a coin flip, whatever their scores say.
            alike = [c for c in plausible if c is not best and c not in close and _described_alike(best, c)]
            if not close and not alike:
                for c in contenders[1:]:
                    c.reason = f"less relevant than {best.procedure_id} ({c.score:.2f} < {best.score:.2f})"
                best.reason = self._refusal(best, threshold, check_health)
                if best.reason is None:
                    return self._select(decision, best, given)
                decision.reason = f"{best.procedure_id} is about the task but not replayable: {best.reason}"
                plausible = [c for c in plausible if c is not best]
            else:  # two sure ones too close to tell apart, or described alike: the judge at hand tells
                tied = [best, *close, *alike]
                names = ", ".join(c.procedure_id for c in tied)
                why = "are described alike" if alike else f"score within {self.margin:g} of each other"
                for c in tied:
                    c.reason = f"ambiguous: {names} {why}"
                decision.reason = f"ambiguous between {names}"
                plausible = tied
        elif vouch is not None and self._refusal(vouch, threshold, check_health) is None:
            for c in candidates:
                if c is not vouch:
                    c.reason = c.reason or f"less relevant than {vouch.procedure_id}"
            decision.reason = (
                f"a confirmed wording ({vouch.alias_id}) vouches for {vouch.procedure_id}: close in meaning to it "
                "and to the description, said in other words, and to nothing else"
            )
            return self._select(decision, vouch, given)
        elif not self._worth_asking(plausible):
            if candidates:
                decision.reason = decision.reason or "no stored procedure is about this task"
            elif not self.store.count():
                decision.reason = (
                    "the store holds no procedures yet: capture one with `sherpa-skills learn capture-success`"
                )
            else:
                decision.reason = "no stored procedure shares a key term or meaning with this task"
            return decision
        offered: list[MatchCandidate] = []
        reach = max((c.semantic or 0.0) for c in plausible) - self.model.ask_gap if plausible else 0.0
        for c in plausible:
            if c.score < self.model.ask_floor and (c.semantic or 0.0) < reach:
                continue  # far from the plausible ones: offering it would only make the question longer
            refusal = self._refusal(c, threshold, check_health)
            if refusal is not None:
                c.reason = f"not offered: {refusal}"
            elif len(offered) < MAX_OFFERED:
                offered.append(c)
        if not offered:
            decision.reason = decision.reason or "the procedures that might fit cannot be replayed"
            return decision
        if verify is not None:
            return self._judge(decision, offered, verify, given)
        for c in offered:
            if c.contrast:
                c.reason = f"needs confirmation: {_contrasted(*c.contrast)}, a near twin is never replayed directly"
            elif not (c.reason and c.reason.startswith("ambiguous")):
                c.reason = f"needs confirmation: below relevance floor {floor:g} ({c.score:.2f}) but plausible"
        decision.decision, decision.offered = "needs-confirmation", offered
        decision.reason = (
            f"{'; '.join(filter(None, [decision.reason]))}{'; ' if decision.reason else ''}"
            f"plausible: {', '.join(c.procedure_id for c in offered)}; which one, if any?"
        )
        return decision

    def _worth_asking(self, plausible: list[MatchCandidate]) -> bool:
        """The best is plausible: its relevance reaches the ask floor, or a cosine stands clear of the others'."""
        if not plausible:
            return False
        if plausible[0].score >= self.model.ask_floor:
            return True
        by_meaning = sorted(plausible, key=lambda c: -(c.semantic or 0.0))
        top = by_meaning[0].semantic or 0.0
        second = (by_meaning[1].semantic or 0.0) if len(by_meaning) > 1 else 0.0
        return top >= self.model.ask_semantic and top - second >= self.model.ask_gap

    def _refusal(self, c: MatchCandidate, threshold: float | None, check_health: bool) -> str | None:
        """Why this candidate cannot be replayed (confidence, health, status), or None."""
        proc = self._procs.get(c.procedure_id) or self.store.get(c.procedure_id)
        health = self.store.health(proc.id) if check_health else None
        c.health = health.status if health is not None else None
        return replay_refusal(proc, health, threshold)

    def _select(
        self, decision: MatchDecision, best: MatchCandidate, given: dict[str, Any], extra: dict[str, str] | None = None
    ) -> MatchDecision:
        best.reason = None
        decision.decision = "match"
        decision.selected = best
        decision.offered = []
        decision.params = {**(extra or {}), **best.params, **{k: str(v) for k, v in given.items()}}
        return decision

    def _judge(
        self, decision: MatchDecision, offered: list[MatchCandidate], verify: Verifier, given: dict[str, Any]
    ) -> MatchDecision:
        """The model at hand chooses among the offered candidates; anything but a clean choice is no-match."""
        procs = [self._procs.get(c.procedure_id) or self.store.get(c.procedure_id) for c in offered]
        verdict = verify.choose(decision.query, [(p, self._text(p)[1].params) for p in procs])
        decision.verification = verdict
        chosen = next((c for c in offered if c.procedure_id == verdict.procedure_id), None)
        if chosen is None:
            for c in offered:
                c.reason = f"offered to the judge: {verdict.reason}"
            decision.reason = f"not confirmed: {verdict.reason}"
            return decision
        for c in offered:
            if c is not chosen:
                c.reason = f"the judge ({verify.model}) chose {chosen.procedure_id}"
        decision.judged_by = f"model:{verify.model}"
        return self._select(decision, chosen, given, verdict.params)
