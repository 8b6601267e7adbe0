"""The Operational Skill Store: procedures captured from successful runs, replayed without the LLM."""
