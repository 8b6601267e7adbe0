"""A judge's alias in a small store vouches for no unrelated ask: six customer questions and a refund procedure with
one confirmed wording, through the example ticket workflow that learns (real store, real embedder). Unrelated short
questions reach the alias rule's cosines (MiniLM puts them 0.41-0.43 from "Order came damaged, requesting money
back") and were replayed as refunds; the refund's own other wordings still replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from sherpa_skills import SkillStore
from sherpa_skills.engine.agent import RunResult
from sherpa_skills.runtime import load_workflow

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ticket_learning"
WORKFLOW = "ticket-learning"
QUESTIONS = [
    "What time do you close on Saturdays?",
    "Do you deliver on weekends?",
    "How can I track my parcel?",
    "Do you have this sofa in green?",
    "How do I delete my account?",
    "What's the warranty on laptops?",
]
REFUNDS = ["I was sent a broken kettle, I want a refund", "Need a refund - the headphones arrived crushed"]
CONFIRMED = "Order came damaged, requesting money back"


def described(text: str) -> str:
    return f"{text} {{{{ order }}}}"  # as a run's task is described: its one-word input as a parameter


def ticket(skills: SkillStore, text: str, order: str) -> RunResult:
    return load_workflow(EXAMPLE / "workflow.yaml").agent(learn=skills).run({"ticket": text, "order": order})


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[SkillStore, str]:
    skills = SkillStore(tmp_path_factory.mktemp("small-store"))
    for n, text in enumerate([*QUESTIONS, *REFUNDS]):
        assert ticket(skills, text, str(4300 + n)).state == "closed"
    [refund] = [p for p in skills.procedures(WORKFLOW) if p.decisions[0].trigger == "refund"]
    skills.confirm(described(CONFIRMED), refund.id, WORKFLOW, by="model:judge")
    yield skills, refund.id
    skills.close()


@pytest.mark.parametrize(
    "unrelated",
    [
        "Do you sell refurbished phones?",
        "Can I pay in instalments?",
        "Where can I find my invoices?",
        "How do I contact customer service by chat?",
    ],
)
def test_an_unrelated_ask_is_not_vouched_into_the_refund(small: tuple[SkillStore, str], unrelated: str) -> None:
    """Asked about or not matched is fine; replayed is a refund nobody asked for."""
    skills, _ = small
    decision = skills.match(described(unrelated), WORKFLOW, params={"order": "4402"})
    assert decision.decision != "match", (decision.selected, decision.reason)


@pytest.mark.parametrize(
    "wording",
    [
        "Refund my order please, half the plates were shattered",
        "The vase was in pieces when I opened the box. Please refund.",
        "REFUND. Damaged item.",
        "damaged goods received, pls refund",
        "The phone case I got was melted?? refund please",
        "Refund needed for order: water damage on arrival",
    ],
)
def test_the_refunds_other_wordings_are_still_vouched_for(small: tuple[SkillStore, str], wording: str) -> None:
    skills, refund = small
    decision = skills.match(described(wording), WORKFLOW, params={"order": "4402"})
    assert (decision.decision, decision.procedure_id) == ("match", refund)
    assert "vouches for" in (decision.reason or "")
