"""The `llama` fixture (a real OpenAI-compatible server on loopback) for this folder's tests."""

from _llm_server import llama  # noqa: F401  (pytest finds fixtures a conftest imports)
