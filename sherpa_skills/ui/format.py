"""Jinja filters: times, durations, rates and JSON as people read them."""

from __future__ import annotations

import json
import time
from typing import Any


def when(ts: float | None) -> str:
    return "-" if not ts else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def clock(ts: float | None) -> str:
    return "-" if not ts else time.strftime("%H:%M:%S", time.localtime(ts)) + f".{int((ts % 1) * 1000):03d}"


def pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, default=str, ensure_ascii=False)


def short(value: Any, size: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= size else text[: size - 1] + "…"


FILTERS = {"when": when, "clock": clock, "pct": pct, "pretty": pretty, "short": short}
