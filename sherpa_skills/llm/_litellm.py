"""Importing litellm: seconds of CPU, so once, offline and quiet, and where it helps in a background thread.

`import litellm` costs about 3.5 s on these machines (see bench/RESULTS.md "Start-up"). Nothing imports it at
module level; the first LLM call does, or `warm_up()` starts it early while a workflow loads and runs its first
fast-forwarded steps.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType

import structlog

__all__ = ["load_litellm", "warm_up"]

log = structlog.get_logger(__name__)

_lock = threading.Lock()  # held for the whole import, so a caller waits for one under way
_warm_lock = threading.Lock()  # only guards starting the thread, so warm_up() never waits for the import
_module: ModuleType | None = None
_warming: threading.Thread | None = None


def load_litellm() -> ModuleType:
    """litellm, imported and configured on first use; waits for a warm-up import already under way."""
    global _module
    if _module is None:
        with _lock:
            if _module is None:
                # Read at import: without it litellm fetches a model cost map from the internet.
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                # Token counting for llama-style names would download a tokenizer from the Hugging Face hub.
                litellm.disable_hf_tokenizer_download = True
                litellm.suppress_debug_info = True
                if hasattr(litellm, "telemetry"):
                    litellm.telemetry = False
                _module = litellm
    return _module


def warm_up() -> bool:
    """Start importing litellm in a daemon thread; True if this call started it (once per process)."""
    global _warming
    with _warm_lock:
        if _module is not None or _warming is not None:
            return False
        _warming = threading.Thread(target=_background_import, name="sherpa-warm-litellm", daemon=True)
        _warming.start()
    return True


def _background_import() -> None:
    try:
        load_litellm()
    except Exception as exc:  # the real call imports again and reports the error where it can be handled
        log.debug("litellm_warm_up_failed", error=str(exc))


def is_loaded() -> bool:
    """Whether litellm has been imported in this process (a caller on an event loop imports it off the loop if not)."""
    return _module is not None
