"""The built-in actions. Importing this package registers them on the default registry."""

from . import context, domain, events, llm_call, machine, memory, shell  # noqa: F401
