"""Importing this registers every built-in action and guard on the default registry."""

from . import guards  # noqa: F401
from .actions import context, events, llm_call, machine, shell  # noqa: F401
from .memory import _actions as memory_actions  # noqa: F401
