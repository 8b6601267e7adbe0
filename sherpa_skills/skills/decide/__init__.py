"""The decision memory: a workflow's past decisions at each state, answering the next one where they agree."""
