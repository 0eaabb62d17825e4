"""The hook runner (Gemini CLI hooks, `docs/gemini-cli-behaviours.md#hooks`): command hooks of the
settings' `hooks` object, for every event.

Settings: `hooks: {<Event>: [{matcher?, sequential?, hooks: [{type: "command",
command, name?, timeout? (ms), env?}]}]}` and `hooksConfig: {enabled, disabled}`.
A hook gets JSON on stdin (`session_id`, `transcript_path`, `cwd`,
`hook_event_name`, `timestamp` and the event's fields) and the environment
`GEMINI_PROJECT_DIR`, `GEMINI_CWD`, `GEMINI_SESSION_ID` (credentials scrubbed). Its
answer is JSON on stdout (stderr when stdout is empty); plain text with exit 0 is a
system message, exit 1 a warning, other exits deny with the text as the reason. A hook
that cannot start, times out (its process group is killed) or fails is no decision:
`HookRunner.on_failure` tells the user, and the turn goes on. A hook's answer is what
it wrote before it exited (`runtime/child_pipes.py`): a child it leaves behind holding
stdout does not hold the turn.

Matchers: a regex on the tool name for tool events (`""`/`*` match all); for the
lifecycle events an exact match on the event's kind (SessionStart's source,
SessionEnd's reason, PreCompress's trigger, Notification's type); model and agent
events run every group.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.child_pipes import run_child
from runtime.processes import GATE_LINE, gated, register_group, unregister_group
from runtime.protocol import now_iso
from runtime.services.secrets import child_environment
from runtime.tools.io.sandbox import Sandbox

logger = logging.getLogger(__name__)

DEFAULT_HOOK_TIMEOUT_MS = 60_000
HOOK_EVENTS = (
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "AfterAgent",
    "Notification",
    "SessionStart",
    "SessionEnd",
    "PreCompress",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
)
TOOL_EVENTS = frozenset({"BeforeTool", "AfterTool"})


@dataclass(frozen=True)
class CommandHook:
    command: str
    name: str | None = None
    timeout_ms: int = DEFAULT_HOOK_TIMEOUT_MS
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HookGroup:
    """Hooks sharing a matcher (a regex on the tool name; "" and "*" match all)."""

    matcher: str
    hooks: tuple[CommandHook, ...]
    sequential: bool = False

    def applies_to(self, value: str | None, *, regex: bool = True) -> bool:
        """Tool events match the tool name by regex; lifecycle events match exactly;
        `value` None (model and agent events) matches every group."""
        if self.matcher in ("", "*") or value is None:
            return True
        if not regex:
            return self.matcher == value
        try:
            return re.search(self.matcher, value) is not None
        except re.error:
            return self.matcher == value


@dataclass(frozen=True)
class HookAnswer:
    """One hook's parsed output; `failed` when it timed out or could not run (no decision)."""

    output: dict[str, Any]
    failed: bool = False


def parse_hook_groups(
    settings_hooks: Mapping[str, Any], event: str, disabled: Sequence[str] = ()
) -> tuple[HookGroup, ...]:
    """The command hooks for `event` from the settings' `hooks` object (bad entries skipped)."""
    groups: list[HookGroup] = []
    for entry in settings_hooks.get(event, []) or []:
        if not isinstance(entry, Mapping):
            logger.warning("hooks.%s: ignoring a non-object entry", event)
            continue
        hooks = []
        for raw in entry.get("hooks", []) or []:
            if (
                not isinstance(raw, Mapping)
                or raw.get("type", "command") != "command"
                or not raw.get("command")
            ):
                logger.warning("hooks.%s: ignoring hook %r (only command hooks run)", event, raw)
                continue
            if raw.get("name") in disabled or raw.get("command") in disabled:
                continue
            env = raw.get("env") or {}
            hooks.append(
                CommandHook(
                    command=str(raw["command"]),
                    name=raw.get("name"),
                    timeout_ms=_timeout_ms(raw.get("timeout")),
                    env={str(k): str(v) for k, v in env.items()}
                    if isinstance(env, Mapping)
                    else {},
                )
            )
        if hooks:
            groups.append(
                HookGroup(
                    str(entry.get("matcher", "") or ""), tuple(hooks), bool(entry.get("sequential"))
                )
            )
    return tuple(groups)


def _timeout_ms(value: Any) -> int:
    """A hook's `timeout` (ms); anything but a positive number is the default (settings
    of the wrong type are reported by `runtime.settings_text`)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return int(value)
    return DEFAULT_HOOK_TIMEOUT_MS


def _parse_output(stdout: str, stderr: str, exit_code: int) -> dict[str, Any]:
    text = stdout.strip() or stderr.strip()
    try:
        parsed = json.loads(text) if text else None
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        if exit_code not in (0, 1) and not parsed.get("decision"):
            parsed = {**parsed, "decision": "deny", "reason": parsed.get("reason") or text}
        return parsed
    if exit_code == 0:
        return {"systemMessage": text} if text else {}
    if exit_code == 1:
        logger.warning("hook exited with 1: %s", text)
        return {"systemMessage": text} if text else {}
    return {"decision": "deny", "reason": text or f"hook exited with code {exit_code}"}


class HookRunner:
    """Runs one session's command hooks for any event (see the module docstring).
    `sandbox`: set when the settings ask for hooks to run in the session's sandbox."""

    sandbox: Sandbox | None = None

    def __init__(
        self,
        settings_hooks: Mapping[str, Any],
        *,
        project_dir: Path,
        cwd: Path,
        session_id: str,
        transcript_path: str = "",
        disabled: Sequence[str] = (),
        env_allowlist: Sequence[str] = (),
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self._groups = {
            event: parse_hook_groups(settings_hooks, event, disabled) for event in HOOK_EVENTS
        }
        self._project_dir = project_dir
        self._cwd = cwd
        self._session_id = session_id
        self.transcript_path = transcript_path
        self._env_allowlist = tuple(env_allowlist)
        self.on_failure = on_failure

    @classmethod
    def from_settings(
        cls,
        settings: Mapping[str, Any],
        **kwargs: Any,
    ) -> HookRunner | None:
        """The runner for `settings` (`hooks`, `hooksConfig`); None when no hook is set."""
        hooks = settings.get("hooks")
        config = settings.get("hooksConfig")
        config = config if isinstance(config, Mapping) else {}
        if not isinstance(hooks, Mapping) or not hooks or config.get("enabled", True) is False:
            return None
        disabled = config.get("disabled")
        runner = cls(
            hooks,
            disabled=tuple(str(d) for d in disabled) if isinstance(disabled, list) else (),
            **kwargs,
        )
        return runner if any(runner._groups.values()) else None

    def has(self, event: str) -> bool:
        return bool(self._groups.get(event))

    async def run(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        match: str | None = None,
        chain_key: str | None = None,
    ) -> list[dict[str, Any]]:
        """The answers of the hooks of `event` whose matcher fits `match`. In a
        sequential group, a hook's `hookSpecificOutput[chain_key]` replaces that key of
        the payload for the next hook."""
        regex = event in TOOL_EVENTS
        selected = [g for g in self._groups.get(event, ()) if g.applies_to(match, regex=regex)]
        hooks = [h for g in selected for h in g.hooks]
        if not hooks:
            return []
        base = {
            "session_id": self._session_id,
            "transcript_path": self.transcript_path,
            "cwd": str(self._cwd),
            "hook_event_name": event,
            "timestamp": now_iso(),
        }
        if any(g.sequential for g in selected):
            answers: list[HookAnswer] = []
            current = dict(payload)
            for hook in hooks:
                answer = await self._run_one(event, hook, {**base, **current})
                answers.append(answer)
                new_value = specific(answer.output, chain_key) if chain_key else None
                if chain_key and new_value is not None:
                    current[chain_key] = new_value
        else:
            answers = list(
                await asyncio.gather(*(self._run_one(event, h, {**base, **payload}) for h in hooks))
            )
        return [a.output for a in answers if not a.failed]

    def _failed(self, event: str, hook: CommandHook, why: str) -> HookAnswer:
        name = hook.name or hook.command
        logger.warning("%s hook %s %s", event, name, why)
        if self.on_failure is not None:
            self.on_failure(f"The {event} hook `{name[:80]}` {why}; carrying on without it.")
        return HookAnswer({}, failed=True)

    async def _run_one(self, event: str, hook: CommandHook, data: dict[str, Any]) -> HookAnswer:
        env = {
            **child_environment(self._env_allowlist),
            "GEMINI_PROJECT_DIR": str(self._project_dir),
            "GEMINI_CWD": str(self._cwd),
            "GEMINI_SESSION_ID": self._session_id,
            **hook.env,
        }
        argv = ["/bin/sh", "-c", hook.command]  # what create_subprocess_shell runs
        if self.sandbox is not None:  # `hooksConfig.sandbox`: confined as the commands
            argv = self.sandbox.wrap(argv, self._cwd)
        started: list[int] = []

        def registered(pid: int) -> None:
            register_group(pid)  # before the gate's line: killed with the agent from then on
            started.append(pid)

        try:
            done = await run_child(
                # behind a gate on its stdin: it runs once its group is registered, so
                # a killed agent never leaves it running (runtime/processes.py)
                gated(argv, keep_stdin=True),
                cwd=self._cwd,
                env=env,
                stdin=GATE_LINE + json.dumps(data, default=str).encode(),
                timeout_s=hook.timeout_ms / 1000,
                own_group=True,  # a timeout kills its children too
                on_start=registered,
            )
        except TimeoutError:  # before OSError, its base class
            return self._failed(event, hook, f"timed out after {hook.timeout_ms} ms")
        except OSError as exc:
            return self._failed(event, hook, f"could not start ({exc})")
        finally:
            for pid in started:
                unregister_group(pid)
        stdout, stderr = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
        if done.returncode in (126, 127):  # the shell could not find or run it: no decision
            detail = stderr.strip().splitlines()
            return self._failed(
                event, hook, f"could not run ({detail[-1] if detail else done.returncode})"
            )
        return HookAnswer(_parse_output(stdout, stderr, done.returncode))


def decision_of(output: Mapping[str, Any]) -> str | None:
    match output.get("decision"):
        case "block" | "deny":
            return "block"
        case "ask":
            return "ask"
        case "approve" | "allow":
            return "allow"
        case _:
            return None


def specific(output: Mapping[str, Any], key: str) -> Any:
    specific = output.get("hookSpecificOutput")
    if isinstance(specific, Mapping) and key in specific:
        return specific[key]
    return output.get(key)


def context_text(output: Mapping[str, Any]) -> str | None:
    """An answer's `hookSpecificOutput.additionalContext`, with `<` and `>` escaped so
    it cannot close the `<hook_context>` tag it is wrapped in (as Gemini CLI)."""
    value = specific(output, "additionalContext")
    if not isinstance(value, str) or not value:
        return None
    return value.replace("<", "&lt;").replace(">", "&gt;")


def joined(values: Any) -> str | None:
    texts = [str(v) for v in values if v]
    return "\n".join(texts) if texts else None


@dataclass(frozen=True)
class HookVerdict:
    """What the hooks of one lifecycle or agent event decided, merged: `blocked` (a
    deny/block decision, with `reason`), `stop` (`continue: false`, `stop_reason`),
    `additional_context` for the model, `system_message` for the user,
    `clear_context` (AfterAgent's `hookSpecificOutput.clearContext`)."""

    blocked: bool = False
    reason: str | None = None
    additional_context: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_message: str | None = None
    clear_context: bool = False
    answers: tuple[dict[str, Any], ...] = ()

    @staticmethod
    def of(answers: Sequence[dict[str, Any]]) -> HookVerdict:
        blocks = [a for a in answers if decision_of(a) == "block"]
        return HookVerdict(
            blocked=bool(blocks),
            reason=joined(a.get("reason") for a in (blocks or answers)),
            additional_context=joined(context_text(a) for a in answers),
            stop=any(a.get("continue") is False for a in answers),
            stop_reason=joined(a.get("stopReason") for a in answers),
            system_message=joined(a.get("systemMessage") for a in answers),
            clear_context=any(specific(a, "clearContext") is True for a in answers),
            answers=tuple(answers),
        )


async def fire(
    runner: HookRunner | None, event: str, payload: dict[str, Any], match: str | None = None
) -> HookVerdict:
    """Run `event`'s hooks (none configured: an empty verdict, at no cost)."""
    if runner is None or not runner.has(event):
        return HookVerdict()
    return HookVerdict.of(await runner.run(event, payload, match=match))
