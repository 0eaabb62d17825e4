"""StreamControl: how a guard ends a model stream early and continues the turn.

Shared by one session's LoopDetectionAdkPlugin, GcliAgentModel and
AdkAgentProtocol. When the loop detector fires on streamed text, Gemini CLI
stops reading that stream at once; here the plugin asks for a cut, the model
stops pulling chunks after the one that tripped the detector (the consolidated
response holds the text up to there), and nothing more of the loop reaches the
editor. A nudge that no later model call of the run carried is sent by the
protocol as a follow-up user turn of the same prompt, so it is kept in history.
"""

from __future__ import annotations

from collections.abc import Callable

TextWatcher = Callable[[str], bool]


class StreamControl:
    """Requests from guards to the model stream and to the protocol's run loop.

    ADK hands events to plugins after the model has already read further, so a
    guard that must stop a stream at a given chunk watches the text here,
    synchronously, as the model produces it (`watch_text`).
    """

    def __init__(self) -> None:
        self._watchers: list[TextWatcher] = []
        self._follow_up: str | None = None
        self._continuing = False

    def add_text_watcher(self, watcher: TextWatcher) -> None:
        """`watcher(text)` sees every streamed text delta (thoughts excluded) before
        it is passed on; returning True ends the stream after that delta."""
        self._watchers.append(watcher)

    def watch_text(self, text: str) -> bool:
        """Show a streamed delta to the watchers; True when the stream must end after it."""
        cut = False
        for watcher in self._watchers:
            cut = watcher(text) or cut
        return cut

    def set_follow_up(self, text: str | None) -> None:
        self._follow_up = text

    def take_follow_up(self) -> str | None:
        """The user turn to send after the run ends (None: the prompt is done)."""
        text, self._follow_up = self._follow_up, None
        self._continuing = text is not None
        return text

    def take_continuing(self) -> bool:
        """True once when the run starting now is a follow-up of the same prompt
        (guards keep their state, such as the loop detector's strikes)."""
        continuing, self._continuing = self._continuing, False
        return continuing

    def reset(self) -> None:
        self._follow_up = None
        self._continuing = False
