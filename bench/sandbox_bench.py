"""The sandbox's cost per command (issue 35): the same short command through the
agent's `CommandRunner`, in the `workspace-write` sandbox (bubblewrap, no network, the
secrets of a home that has them hidden) and without it, interleaved in the same run.

`python -m bench.sandbox_bench --runs 50` prints the two medians, their ratio and the
cost (the median of each pair's difference; target ≤ 20 ms); `bench/run.py --only
sandbox` adds the rows to the report.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import Metric

COMMAND = "true"
COST_TARGET_S = 0.020


async def _samples(runs: int, folder: Path) -> tuple[list[float], list[float]]:
    from runtime.tools.io.commands import CommandRunner
    from runtime.tools.io.sandbox import Sandbox, SandboxSettings

    ws, home = folder / "ws", folder / "home"
    for path in (ws, home / ".ssh", home / ".aws", home / ".config" / "gh"):
        path.mkdir(parents=True)
    (home / ".netrc").write_text("machine x\n")
    (ws / ".env").write_text("TOKEN=x\n")
    sandbox = Sandbox.for_session(
        SandboxSettings("workspace-write"), roots=(ws,), home=home, env={"HOME": str(home)}
    )
    if not sandbox.active:
        raise RuntimeError(f"the sandbox cannot run here: {sandbox.problem}")
    plain, boxed = CommandRunner(), CommandRunner(sandbox=sandbox)
    for runner in (plain, boxed):  # the first run of each warms the caches
        await runner.run(COMMAND, ws, 30)
    without: list[float] = []
    within: list[float] = []
    for _ in range(runs):
        for runner, out in ((plain, without), (boxed, within)):
            started = time.perf_counter()
            result = await runner.run(COMMAND, ws, 30)
            out.append(time.perf_counter() - started)
            if result.exit_code != 0:
                raise RuntimeError(f"{COMMAND!r} failed: {result.output}")
    return without, within


def measure_sandbox(runs: int) -> list[Metric]:
    """The sandboxed command beside the same command unsandboxed, and the cost."""
    folder = Path(tempfile.mkdtemp(prefix="adk-acp-bench-sandbox-", dir="/var/tmp"))
    try:
        without, within = asyncio.run(_samples(max(3, runs), folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    cost = [boxed - plain for plain, boxed in zip(without, within, strict=True)]
    return [
        Metric(
            key="sandbox_command",
            label=f"`{COMMAND}` in the workspace-write sandbox",
            unit="ms",
            samples=within,
            baseline=without,
            baseline_name="unsandboxed",
            note="through CommandRunner (a local process group); ratio against the same "
            "command without the sandbox, interleaved in the same run",
        ),
        Metric(
            key="sandbox_cost",
            label="per-command cost of the sandbox",
            unit="ms",
            samples=cost,
            target=COST_TARGET_S,
            baseline_name="",
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="commands of each kind")
    args = parser.parse_args(argv)
    command, cost = measure_sandbox(args.runs)
    ratio = command.ratio or 0.0
    sys.stdout.write(
        f"{command.label}: median {command.median * 1000:.1f} ms, unsandboxed "
        f"{statistics.median(command.baseline) * 1000:.1f} ms, ratio {ratio:.2f}x "
        f"(n={len(command.samples)})\n"
        f"{cost.label}: median {cost.median * 1000:.1f} ms (target ≤ "
        f"{COST_TARGET_S * 1000:.0f} ms): {cost.verdict}\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
