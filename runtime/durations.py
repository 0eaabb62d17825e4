"""The one human format of a duration (a quota's reset, a retry's wait, a session's
age): `45s`, `12m 30s`, `3h 5m`."""

from __future__ import annotations


def format_duration(seconds: float) -> str:
    """A short human duration: `45s`, `12m 30s`, `3h 5m`."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m {secs}s" if secs else f"{minutes}m"
    return f"{secs}s"
