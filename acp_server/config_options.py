"""Session modes and config options (mode; model), kept in sync.

`session/new` returns both `modes` and `configOptions`; `session/set_mode`,
`session/set_config_option` and the old `session/set_model` all change the same
state on the runtime session, and every change answers (or notifies) with the
complete option list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_server.errors import invalid_params
from runtime.models.catalog import OFFERED
from runtime.tools.policy.modes import MODES, is_mode

if TYPE_CHECKING:
    from runtime.session import AgentSession

MODE_IDS = tuple(m.id for m in MODES)

MODEL_CHOICES: tuple[tuple[str, str], ...] = tuple((m.id, m.display_name) for m in OFFERED)

MODE_OPTION = "mode"
MODEL_OPTION = "model"


def model_choices(
    current: str, offered: list[tuple[str, str]] | None = None
) -> list[tuple[str, str]]:
    """The model option's entries: the session's (other providers' models too), else
    Gemini's catalogue; the current model always among them."""
    choices = list(offered or MODEL_CHOICES)
    if current not in {c[0] for c in choices}:
        choices.append((current, current))
    return choices


def _offered(session: AgentSession) -> list[tuple[str, str]] | None:
    state = getattr(session, "model_state", None)  # the early `session/new` has none yet
    offered = getattr(state, "offered", None)
    return offered if isinstance(offered, list) else None


class ConfigOptions:
    """Builds the ACP views of a runtime session's mode and model."""

    def modes(self, session: AgentSession) -> dict[str, Any]:
        return {
            "currentModeId": session.mode,
            "availableModes": [
                {"id": m.id, "name": m.name, "description": m.description} for m in MODES
            ],
        }

    def options(self, session: AgentSession) -> list[dict[str, Any]]:
        return [
            {
                "id": MODE_OPTION,
                "name": "Mode",
                "description": "How much the agent may do without asking.",
                "category": "mode",
                "type": "select",
                "currentValue": session.mode,
                "options": [
                    {"value": m.id, "name": m.name, "description": m.description} for m in MODES
                ],
            },
            {
                "id": MODEL_OPTION,
                "name": "Model",
                "description": "The Gemini model for this session.",
                "category": "model",
                "type": "select",
                "currentValue": session.model_choice,
                "options": [
                    {"value": v, "name": n}
                    for v, n in model_choices(session.model_choice, _offered(session))
                ],
            },
        ]

    def set(self, session: AgentSession, option_id: str, value: Any) -> None:
        if option_id == MODE_OPTION:
            self.set_mode(session, value)
        elif option_id == MODEL_OPTION:
            if not isinstance(value, str) or not value.strip():
                raise invalid_params("the model must be a non-empty string")
            session.choose_model(value.strip())
        else:
            raise invalid_params(f"unknown config option {option_id!r}; known: mode, model")

    def set_mode(self, session: AgentSession, mode: Any) -> None:
        if not is_mode(mode):
            raise invalid_params(f"unknown mode {mode!r}; known: {', '.join(MODE_IDS)}")
        session.set_mode(mode)
