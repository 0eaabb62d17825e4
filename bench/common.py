"""What every benchmark group shares: how to start the agents, their sandbox, a warm-up
wait, the one-shot client, and the report's row (`Metric`).

The groups (`*_bench.py` and the ones in `run.py`) import from here; this module imports
no group, so `bench/run.py` alone ties them together.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.client import AgentProcess, Received
from bench.script import STREAM_CHUNKS, fake_script

ROOT = Path(__file__).resolve().parent.parent
ECHO_AGENT = ROOT / "bench" / "echo_agent.py"
WARM_PAUSE_S = 0.2
SETTLE_MIN_S = 3.0
SETTLE_MAX_S = 12.0
WARM_PROMPTS = 5  # warm prompts per fresh process in the `user` and `first` groups
# Credentials and settings that must not leak into the benchmark from the caller's env.
_SCRUB_ENV = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GEMINI_MODEL",
    "ADK_ACP_TRACE_FILE",
    "XDG_STATE_HOME",
    "ECHO_AGENT_CHUNKS",
    "PYTHONPROFILEIMPORTTIME",
)


# ---------------------------------------------------------------- agents


@dataclass(frozen=True)
class AgentSpec:
    """How to start one agent and drive it in the benchmarks."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    settle: bool  # wait for a background warm-up after `initialize`
    stream_meta: Mapping[str, Any] | None = None  # `_meta` of the 200-chunk prompt
    cancel_text: str = "write a long story"  # a prompt that streams until cancelled

    def spawn(self, env: Mapping[str, str] | None = None) -> AgentProcess:
        """Start the agent (with `env` instead of the spec's own, if given)."""
        return AgentProcess.spawn(self.argv, env=env or self.env, cwd=self.cwd)


@dataclass
class Sandbox:
    """A temporary HOME and workspace shared by the runs of one benchmark."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    def env(self, **extra: str) -> dict[str, str]:
        """Agents serve cold unless a group asks for the warm server (first_bench.py)."""
        return {**clean_env(), "HOME": str(self.home), "ADK_ACP_NO_WARM": "1", **extra}

    def script(self, name: str, short_turns: int, stream_turns: int) -> Path:
        """Write a `--fake-responses` file: short replies first, then 200-chunk ones."""
        path = self.root / name
        path.write_text(fake_script(short_turns, stream_turns), encoding="utf-8")
        return path


def clean_env() -> dict[str, str]:
    """This process's environment without credentials, model or trace settings."""
    return {k: v for k, v in os.environ.items() if k not in _SCRUB_ENV}


@contextmanager
def sandbox() -> Iterator[Sandbox]:
    with tempfile.TemporaryDirectory(prefix="adk-acp-bench-") as tmp:
        box = Sandbox(Path(tmp))
        box.home.mkdir()
        box.workspace.mkdir()
        (box.workspace / "README.md").write_text("# bench workspace\n", encoding="utf-8")
        yield box


def adk_acp_command() -> list[str]:
    """The console script next to this interpreter (`.venv/bin/adk-acp`)."""
    script = Path(sys.executable).parent / "adk-acp"
    if not script.exists():
        raise SystemExit(f"adk-acp console script not found next to {sys.executable}")
    return [str(script)]


def echo_spec(box: Sandbox) -> AgentSpec:
    """The floor: `bench/echo_agent.py` with this interpreter (200 chunks via `_meta`)."""
    return AgentSpec(
        name="echo",
        argv=(sys.executable, str(ECHO_AGENT)),
        env=box.env(),
        cwd=str(box.workspace),
        settle=False,
        stream_meta={"echoChunks": STREAM_CHUNKS},
        cancel_text="/wait",
    )


def adk_spec(
    box: Sandbox, script: Path | None = None, env: Mapping[str, str] | None = None
) -> AgentSpec:
    """`adk-acp` from the console script, with `--fake-responses script` if given."""
    argv = adk_acp_command() + (["--fake-responses", str(script)] if script else [])
    return AgentSpec(
        name="adk-acp",
        argv=tuple(argv),
        env=env or box.env(),
        cwd=str(box.workspace),
        settle=True,
    )


def session_id(received: Received) -> str:
    """The id in a `session/new` response (raises on an error response)."""
    return str(received.result["sessionId"])


# ---------------------------------------------------------------- figures


@dataclass
class Metric:
    """One row of the report: samples of adk-acp and of the floor, and the target."""

    key: str
    label: str
    unit: str  # "ms" (samples are seconds), "MB", or "x" (a unitless ratio)
    samples: list[float]
    baseline: list[float] = field(default_factory=list)
    target: float | None = None  # seconds / MB, or a ratio when `ratio_target`
    ratio_target: bool = False
    note: str = ""
    baseline_name: str = "echo"  # what the baseline samples are of ("" when none)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def baseline_median(self) -> float | None:
        return statistics.median(self.baseline) if self.baseline else None

    @property
    def ratio(self) -> float | None:
        base = self.baseline_median
        return self.median / base if base else None

    @property
    def verdict(self) -> str:
        if self.target is None:
            return "info"
        value = self.ratio if self.ratio_target else self.median
        if value is None:
            return "info"
        return "meets" if value <= self.target else "misses"

    def scaled(self, value: float) -> float:
        return value * 1000 if self.unit == "ms" else value

    def as_json(self) -> dict[str, Any]:
        base = self.baseline_median
        return {
            **asdict(self),
            "median": self.scaled(self.median),
            "baseline_median": self.scaled(base) if base is not None else None,
            "ratio": self.ratio,
            "verdict": self.verdict,
            "samples": [self.scaled(v) for v in self.samples],
            "baseline": [self.scaled(v) for v in self.baseline],
            "target": (
                self.target
                if self.ratio_target or self.target is None
                else self.scaled(self.target)
            ),
        }


# ---------------------------------------------------------------- a warmed-up process


def settle(agent: AgentProcess, spec: AgentSpec) -> float:
    """Wait until the agent's background warm-up is over (≥ 3 s, then until idle)."""
    if not spec.settle:
        return 0.0
    return agent.wait_idle(at_least=SETTLE_MIN_S, at_most=SETTLE_MAX_S)


# ---------------------------------------------------------------- the one-shot client


@dataclass
class OneShot:
    """Times from spawn (seconds) for a client that does not wait where it need not."""

    initialize: float
    session_new: float
    first_chunk: float
    end: float
    stderr: str = ""


def one_shot(spec: AgentSpec, env: Mapping[str, str] | None = None) -> OneShot:
    """`initialize` + `session/new` written at spawn; the prompt when the session id arrives.

    The prompt needs the id `session/new` returns, so one round trip is unavoidable.
    """
    with spec.spawn(env=env) as agent:
        init_id, new_id = agent.new_id(), agent.new_id()
        agent.send_many(
            [
                {
                    "id": init_id,
                    "method": "initialize",
                    "params": {"protocolVersion": 1, "clientCapabilities": {}},
                },
                {
                    "id": new_id,
                    "method": "session/new",
                    "params": {"cwd": spec.cwd, "mcpServers": []},
                },
            ]
        )
        init = agent.response(init_id)
        created = agent.response(new_id)
        turn = agent.prompt(session_id(created), "hello")
        agent.close()
        assert turn.first_chunk is not None and turn.end is not None
        t0 = agent.spawned_at
        return OneShot(
            init.t - t0,
            created.t - t0,
            turn.first_chunk - t0,
            turn.end - t0,
            stderr=agent.stderr_text(limit=None),
        )
