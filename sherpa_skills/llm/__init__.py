"""The one path to an LLM (litellm, imported on first use) and the scripted stand-in model for tests and the demo."""
