"""Settings, flags and environment, resolved as Gemini CLI does.

Sources, lowest to highest: built-in defaults, `~/.gemini/settings.json` (user),
`<workspace>/.gemini/settings.json` (workspace), environment variables, flags.
Nothing here reads process-global state after construction: the workspace and
the user's home are explicit arguments, so tests and sessions never share them.
Each file is read as Gemini CLI reads it (`runtime.settings_text`: comments, `$VAR`
expansion, wrongly typed fields dropped and reported in `settings_problems`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from runtime.credentials import saved_api_key
from runtime.errors import AuthRequiredError, ConfigError
from runtime.settings_text import check_types, expand_env, strip_json_comments
from runtime.tools.io.sandbox.settings import OFF, SandboxSettings, resolve_sandbox
from runtime.tools.policy.modes import ApprovalMode, is_mode

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "gemini-2.5-pro"

AuthKind = Literal["api_key", "vertex", "fake", "none"]


@dataclass(frozen=True)
class AuthConfig:
    """How the ContentGenerator reaches a model. `fake` means a scripted model file;
    `none`: no Google credentials, only other providers' models (`PROVIDER/NAME`)."""

    kind: AuthKind
    api_key: str | None = None
    project: str | None = None
    location: str | None = None
    base_url: str | None = None
    fake_responses: Path | None = None


@dataclass(frozen=True)
class Limits:
    """Per-prompt limits (0 or None = unlimited). Gemini CLI's `model.maxSessionTurns` et al."""

    max_turns: int | None = None
    max_tokens: int | None = None
    max_time_s: float | None = None


@dataclass(frozen=True)
class AgentFlags:
    """What the command line said; None means 'not given'."""

    model: str | None = None
    fake_responses: Path | None = None
    record_responses: Path | None = None
    approval_mode: ApprovalMode | None = None
    max_turns: int | None = None
    max_tokens: int | None = None
    max_time_s: float | None = None
    sessions_dir: Path | None = None
    store: str | None = None
    """`--store`: a `postgresql://` URL for sessions in a database (else the files)."""
    sandbox: str | None = None
    """`--sandbox [MODE]`: the sandbox of the commands (`runtime.tools.io.sandbox`)."""


@dataclass(frozen=True)
class RuntimeConfig:
    """Resolved configuration for one session (a workspace)."""

    workspace: Path
    model: str
    settings: dict[str, Any]
    limits: Limits
    approval_mode: ApprovalMode = "default"
    record_responses: Path | None = None
    fake_responses: Path | None = None
    home: Path = field(default_factory=Path.home)
    env: dict[str, str] = field(default_factory=dict)
    settings_problems: tuple[str, ...] = ()
    """Fields of the settings files that were of the wrong type (ignored: defaults used)."""
    sandbox: SandboxSettings = OFF
    """The sandbox of the session's commands (`runtime.tools.io.sandbox.settings`)."""

    def with_model(self, model: str) -> RuntimeConfig:
        return replace(self, model=model)

    def restored(self, metadata: Mapping[str, Any]) -> RuntimeConfig:
        """A record's mode and model choice (its metadata) over the configured ones."""
        mode, choice = metadata.get("mode"), metadata.get("modelChoice")
        config = self
        if isinstance(mode, str) and is_mode(mode):
            config = replace(config, approval_mode=mode)
        if isinstance(choice, str) and choice:
            config = config.with_model(choice)
        return config

    @property
    def temp_dir(self) -> Path:
        """The project's temp folder (full tool outputs, masked outputs)."""
        import hashlib

        digest = hashlib.sha256(str(self.workspace).encode()).hexdigest()[:16]
        return self.home / ".gemini" / "tmp" / digest


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        logger.warning("cannot read settings %s: %s", path, exc)
        return {}
    try:
        data = json.loads(strip_json_comments(text))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object")
    return data


@dataclass(frozen=True)
class SettingsFile:
    """One settings.json as the agent uses it: comments stripped, `$VAR` expanded,
    wrongly typed fields dropped (`problems` says which)."""

    data: dict[str, Any]
    problems: tuple[str, ...] = ()


def read_settings(path: Path, env: Mapping[str, str]) -> SettingsFile:
    """Raises ConfigError when the file is not a JSON object."""
    data, problems = check_types(expand_env(_read_json(path), env))
    return SettingsFile(data, tuple(f"{path}: {problem}" for problem in problems))


def _merge(
    base: dict[str, Any], over: dict[str, Any], path: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Workspace settings over user settings, as Gemini CLI merges them: objects key by
    key, except that an `mcpServers` entry is taken whole (a workspace `httpUrl` server
    must not inherit a user `command`); the hook lists of an event run both (user's
    first); `hooksConfig.disabled` is the union; any other value is replaced."""
    merged = dict(base)
    for key, value in over.items():
        here = (*path, key)
        old = merged.get(key)
        if path == ("mcpServers",):
            merged[key] = value
        elif len(here) == 2 and here[0] == "hooks" and isinstance(old, list):
            merged[key] = [*old, *value] if isinstance(value, list) else value
        elif here == ("hooksConfig", "disabled") and isinstance(old, list):
            merged[key] = (
                [*old, *(v for v in value if v not in old)] if isinstance(value, list) else value
            )
        elif isinstance(value, dict) and isinstance(old, dict):
            merged[key] = _merge(old, value, here)
        else:
            merged[key] = value
    return merged


def load_settings(
    workspace: Path, home: Path, env: Mapping[str, str] | None = None
) -> SettingsFile:
    """User settings, then workspace settings over them (each read by `read_settings`)."""
    env = os.environ if env is None else env
    user = read_settings(home / ".gemini" / "settings.json", env)
    if workspace.resolve() == home.resolve():
        return user
    ours = read_settings(workspace / ".gemini" / "settings.json", env)
    data, problems = dict(ours.data), ours.problems
    for key in USER_ONLY_KEYS:
        if key in data:
            del data[key]
            problems += (
                f"{workspace / '.gemini' / 'settings.json'}: {key} is taken from your own "
                "settings only (~/.gemini/settings.json): a repository cannot choose where "
                "your code and keys are sent",
            )
    return SettingsFile(_merge(user.data, data), user.problems + problems)


USER_ONLY_KEYS = ("modelProviders",)
"""Settings a workspace's file may not set: a provider's `baseUrl` and `apiKeyEnv` would let
a repository send the user's code, and a key of theirs, to a server of its choosing."""


# Gemini CLI's spellings of the modes a settings file may choose.
_SETTINGS_MODES: dict[str, ApprovalMode] = {"auto_edit": "autoEdit"}


def settings_approval_mode(value: object) -> tuple[ApprovalMode, str | None]:
    """The mode `general.defaultApprovalMode` asks for, and why it was not taken (or None).

    As in Gemini CLI, a settings file cannot start sessions in YOLO: a repository's
    `.gemini/settings.json` would otherwise make every command run unasked. YOLO is
    chosen on the command line (`--approval-mode yolo`) or in the editor's mode picker."""
    if value is None:
        return "default", None
    mode = _SETTINGS_MODES.get(str(value), value)
    if mode == "yolo":
        return "default", (
            "general.defaultApprovalMode yolo is not taken from settings (YOLO is chosen on "
            "the command line or in the editor); default is used"
        )
    if not is_mode(mode):
        return "default", f"general.defaultApprovalMode {value!r} is not a mode; default is used"
    return mode, None


def _positive(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _section(settings: dict[str, Any], key: str) -> dict[str, Any]:
    """A settings object by key; an empty one when absent or not an object."""
    value = settings.get(key)
    return value if isinstance(value, dict) else {}


def resolve_config(
    workspace: Path,
    flags: AgentFlags,
    env: dict[str, str] | None = None,
    home: Path | None = None,
) -> RuntimeConfig:
    """The session's configuration.

    Model: --model, then GEMINI_MODEL, then `model.name` (workspace over user),
    then the default."""
    env = dict(os.environ if env is None else env)
    home = home or Path(env.get("HOME") or Path.home())
    loaded = load_settings(workspace, home, env)
    settings = loaded.data
    model_settings = _section(settings, "model")
    model = flags.model or env.get("GEMINI_MODEL") or model_settings.get("name") or DEFAULT_MODEL
    limits = Limits(
        max_turns=flags.max_turns or _positive(model_settings.get("maxSessionTurns")),
        max_tokens=flags.max_tokens or _positive(model_settings.get("maxTokensPerPrompt")),
        max_time_s=flags.max_time_s or _positive(model_settings.get("maxTimeSeconds")),
    )
    general = _section(settings, "general")
    approval, problem = settings_approval_mode(general.get("defaultApprovalMode"))
    problems = loaded.problems
    if problem is not None:
        logger.warning("%s", problem)
        problems += (problem,)
    if flags.approval_mode is not None:
        approval = flags.approval_mode
    sandbox, sandbox_problems = resolve_sandbox(
        flags.sandbox, env, *_user_and_workspace(workspace, home, env)
    )
    problems += sandbox_problems
    return RuntimeConfig(
        workspace=workspace,
        model=str(model),
        settings=settings,
        limits=limits,
        approval_mode=approval,
        record_responses=flags.record_responses,
        fake_responses=flags.fake_responses,
        home=home,
        env=env,
        settings_problems=problems,
        sandbox=sandbox,
    )


def _user_and_workspace(
    workspace: Path, home: Path, env: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The user's and the workspace's settings apart (the sandbox reads them so)."""
    user = read_settings(home / ".gemini" / "settings.json", env).data
    if workspace.resolve() == home.resolve():
        return user, {}
    return user, read_settings(workspace / ".gemini" / "settings.json", env).data


def resolve_sessions_dir(flags: AgentFlags, env: dict[str, str], home: Path) -> Path:
    """Where sessions are recorded: --sessions-dir, then `general.sessionsDir` in the
    user's settings (never a workspace's: a repository must not move the user's
    records), then `$XDG_STATE_HOME/adk-acp/sessions` (`~/.local/state/...`)."""
    from runtime.services.recording import default_sessions_dir

    if flags.sessions_dir is not None:
        return flags.sessions_dir
    user = _section(read_settings(home / ".gemini" / "settings.json", env).data, "general")
    configured = user.get("sessionsDir")
    if isinstance(configured, str) and configured:
        path = Path(configured).expanduser()
        return path if path.is_absolute() else home / path
    return default_sessions_dir(env, home)


STORE_ENV = "ADK_ACP_STORE"


def resolve_store_url(flags: AgentFlags, env: dict[str, str], home: Path) -> str | None:
    """Where sessions are stored when not in files: --store, then $ADK_ACP_STORE, then
    `general.sessionStore` in the user's settings (never a workspace's); None: the
    JSONL files of `resolve_sessions_dir`. Only `postgresql://` URLs are known."""
    from runtime.services.session_store import is_database_url

    url = flags.store or env.get(STORE_ENV)
    if not url:
        user = _section(read_settings(home / ".gemini" / "settings.json", env).data, "general")
        configured = user.get("sessionStore")
        url = configured if isinstance(configured, str) else None
    if not url:
        return None
    if not is_database_url(url):
        raise ConfigError("the session store must be a postgresql:// URL (or left unset: files)")
    return url


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def resolve_auth(
    env: dict[str, str],
    *,
    fake_responses: Path | None = None,
    api_key_override: str | None = None,
    prefer: Literal["api_key", "vertex"] | None = None,
    model: str | None = None,
) -> AuthConfig:
    """Pick credentials: a fake script, then Vertex AI when asked for, then an API key.
    Without Google credentials, a session whose `model` is another provider's
    (`openai/NAME`, `ollama/NAME`…) needs none (`none`).

    Raises AuthRequiredError with a message that says what to set.
    """
    try:
        return _resolve_google_auth(env, fake_responses, api_key_override, prefer)
    except AuthRequiredError:
        from runtime.models.providers import is_provider_model

        if model is not None and is_provider_model(model):
            return AuthConfig(kind="none")
        raise


def _resolve_google_auth(
    env: dict[str, str],
    fake_responses: Path | None,
    api_key_override: str | None,
    prefer: Literal["api_key", "vertex"] | None,
) -> AuthConfig:
    if fake_responses is not None:
        return AuthConfig(kind="fake", fake_responses=fake_responses)
    use_vertex = prefer == "vertex" or (
        prefer is None and _truthy(env.get("GOOGLE_GENAI_USE_VERTEXAI"))
    )
    if use_vertex:
        project = env.get("GOOGLE_CLOUD_PROJECT")
        location = env.get("GOOGLE_CLOUD_LOCATION") or ("global" if project else None)
        api_key = api_key_override or env.get("GOOGLE_API_KEY")
        if not project and not api_key:
            raise AuthRequiredError(
                "Vertex AI needs GOOGLE_CLOUD_PROJECT (and optionally GOOGLE_CLOUD_LOCATION) with "
                "Application Default Credentials (gcloud auth application-default login), "
                "or GOOGLE_API_KEY for Vertex AI express mode."
            )
        return AuthConfig(
            kind="vertex",
            api_key=api_key if not project else None,
            project=project,
            location=location,
            base_url=env.get("GOOGLE_VERTEX_BASE_URL"),
        )
    api_key = (
        api_key_override
        or env.get("GEMINI_API_KEY")
        or env.get("GOOGLE_API_KEY")
        or saved_api_key(env)
    )
    if not api_key:
        raise AuthRequiredError(
            "Authentication required: sign in with `adk-acp --login` (the editor's "
            '"Log in in terminal"), or set GEMINI_API_KEY (get a key at '
            "https://aistudio.google.com/apikey), or set GOOGLE_GENAI_USE_VERTEXAI=true with "
            "GOOGLE_CLOUD_PROJECT for Vertex AI, then authenticate again."
        )
    return AuthConfig(kind="api_key", api_key=api_key, base_url=env.get("GOOGLE_GEMINI_BASE_URL"))
