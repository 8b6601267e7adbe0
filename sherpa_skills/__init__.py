"""sherpa-skills: a hierarchical state-machine agent runtime that learns procedures."""

import os as _os

# litellm fetches a model cost map at import unless told not to; nothing here reaches the internet.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_os.environ.setdefault("HF_HUB_OFFLINE", "1")

__version__ = "0.1.0"
