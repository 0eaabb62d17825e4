"""Reading `python -X importtime` output (`PYTHONPROFILEIMPORTTIME=1`): where a start's
import time goes. Used by the `oneshot` group (`bench/run.py`) and the `first` group's
import profile (`bench/first_bench.py`)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

_IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|( *)(\S+)")


@dataclass(frozen=True)
class ImportRecord:
    """One line of `-X importtime` output (times in seconds)."""

    self_s: float
    cumulative_s: float
    depth: int
    name: str


def parse_importtime(stderr: str) -> list[ImportRecord]:
    """The `-X importtime` lines of `stderr`, in order (children before their parent)."""
    out = []
    for line in stderr.splitlines():
        m = _IMPORT_LINE.match(line)
        if m:
            depth = (len(m.group(3)) - 1) // 2
            self_s, cumulative_s = int(m.group(1)) / 1e6, int(m.group(2)) / 1e6
            out.append(ImportRecord(self_s, cumulative_s, depth, m.group(4)))
    return out


def import_self_times(records: Sequence[ImportRecord]) -> dict[str, float]:
    """Seconds of import work per package (self times summed; google.* split one level)."""
    groups: dict[str, float] = defaultdict(float)
    for rec in records:
        parts = rec.name.split(".")
        group = ".".join(parts[:2]) if parts[0] == "google" and len(parts) > 1 else parts[0]
        groups[group] += rec.self_s
    return dict(groups)


def import_children(records: Sequence[ImportRecord], name: str) -> tuple[float, list[ImportRecord]]:
    """Cumulative seconds of top-level import `name` and its direct children."""
    for i, rec in enumerate(records):
        if rec.name == name and rec.depth == 0:
            children: list[ImportRecord] = []
            for child in reversed(records[:i]):
                if child.depth == 0:
                    break
                if child.depth == 1:
                    children.append(child)
            return rec.cumulative_s, children
    return 0.0, []
