"""Embedding sherpa-skills in Python: a custom action and guard, a workflow from text, a durable run.

Run it with `python examples/embed.py`; it keeps its state in a temporary folder and needs no API key.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel

import sherpa_skills as sk


class Order(BaseModel):
    items: list[float]
    discount: Annotated[float, sk.Internal("discount")] = 0.0  # read from the context unless the call gives it


@sk.action("price_order")
def price_order(args: Order, ctx: sk.ActionContext) -> sk.ActionResult:
    """A typed action: items come from the call, the discount is read from the context when not given."""
    total = round(sum(args.items) * (1 - args.discount), 2)
    return sk.ActionResult(outputs={"total": total}, context={"total": total})


@sk.guard("big_order")
def big_order(view: sk.BeliefView, args: BaseModel) -> bool:
    """Guards read belief; they cannot change it."""
    return view.get("total", 0) > 100


WORKFLOW = """
name: checkout
inputs:
  items: {type: array, required: true}
context: {discount: 0.1}
initial: pricing
states:
  pricing:
    on_enter:
      price_order: {items: {from_context: items}}
  review:
    initial: auto
    states:
      auto: {}
      manual: {waiting: true, description: someone checks orders over 100}
  done: {final: true}
transitions:
  - {trigger: priced, source: pricing, dest: review}
  - {trigger: escalate, source: review/auto, dest: review/manual, conditions: big_order}
  - {trigger: accept, source: review/auto, dest: done, unless: big_order}
  - {trigger: sign_off, source: review/manual, dest: done}
"""


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="sherpa-embed-"))
    workflow = sk.load_workflow_text(WORKFLOW, name="checkout")
    store = sk.RunStore(home=home)

    small = workflow.agent(store=store).run({"items": [10, 20]})
    print("small order:", small.status, small.state, "total", small.context["total"])

    big = workflow.agent(store=store).run({"items": [80, 70]})
    print("big order:  ", big.status, big.state, "total", big.context["total"])

    # Later, maybe in another process: rebuild the agent from the store and give it the human's decision.
    resumed = sk.Agent.resume(store, big.run_id, workflow.machine, workflow.policy).run(trigger="sign_off")
    print(
        "signed off: ",
        resumed.status,
        resumed.state,
        "after",
        resumed.steps,
        "steps,",
        resumed.fast_forwards,
        "fast-forwards,",
        resumed.llm_calls,
        "LLM calls",
    )


if __name__ == "__main__":
    main()
