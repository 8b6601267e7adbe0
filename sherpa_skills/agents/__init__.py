"""Several agents: typed events, the in-process and Redis Streams buses, multi-agent teams and the agent service."""
