"""The parts of a run that the Agent (engine/agent.py, the loop) holds or calls: each module one job."""
