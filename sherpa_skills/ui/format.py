"""Jinja filters: times, durations, rates and JSON as people read them."""

from __future__ import annotations

import json
import time
from typing import Any


def when(ts: float | None) -> str:
    return "-" if not ts else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def iso(ts: float | None) -> str:
    """For a <time datetime=...> attribute: machines read that one, people the text."""
    return "" if not ts else time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(ts))


def clock(ts: float | None) -> str:
    return "-" if not ts else time.strftime("%H:%M:%S", time.localtime(ts)) + f".{int((ts % 1) * 1000):03d}"


def pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, default=str, ensure_ascii=False)


def short(value: Any, size: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= size else text[: size - 1] + "…"


def duration(seconds: float | None) -> str:
    """A span of time as people say it: 850 ms, 12.3 s, 4 min 5 s, 2 h 10 min."""
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def linked_summary(text: str) -> Any:
    """A heartbeat phase's summary with its counts of open tensions and proposals linked to the pages that list them."""
    import re

    from markupsafe import Markup, escape

    html = str(escape(text))
    html = re.sub(r"(\d+ open tensions)", r'<a href="/memory#tensions">\1</a>', html)
    html = re.sub(r"(\d+ open proposals)", r'<a href="/domains#proposals">\1</a>', html)
    return Markup(html)


FILTERS = {
    "when": when,
    "iso": iso,
    "clock": clock,
    "pct": pct,
    "pretty": pretty,
    "short": short,
    "duration": duration,
    "linked_summary": linked_summary,
}
