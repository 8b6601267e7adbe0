"""The engine: a workflow spec compiled to flat tables, an agent that ticks it, its belief and its durable run store."""
