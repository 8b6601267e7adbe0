"""`sherpa-skills learn …`: the skill store from the command line (capture, list, replay, health, stats)."""
