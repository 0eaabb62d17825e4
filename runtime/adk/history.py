"""ConversationRecord → ADK events (design: the /rewind walkthrough's rebuild).

A loaded, resumed or rewound session starts with an empty GcliSessionService
session; its history comes back by appending one ADK `Event` per recorded turn
(single append, as live). Conversion: ISO timestamps → epoch seconds, `user` →
author `user`, `gemini` → the agent, a deterministic invocation id per message,
function calls from the recorded parts (thought signatures kept) or, in a record
written by Gemini CLI, from `toolCalls`; function responses from each call's
`result`. A call the record has no result for (the process died while it ran) gets
an error response, so the history the model sees stays well formed. Info, warning
and error messages are the user's view only and are not sent to the model.

When the record holds a compression (`type: "compression"`), the history starts
at its summary: `[user: summary, model: acknowledgement, ...the rest]`.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from runtime.services.record import CompressionMessage, Message, tool_calls

logger = logging.getLogger(__name__)

INTERRUPTED = "The call was interrupted: the agent stopped before it finished."
COMPRESSION_ACK = "Got it. Thanks for the additional context!"


def _epoch(timestamp: Any) -> float:
    if isinstance(timestamp, str):
        try:
            return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return 0.0


def _parts(raw: Any) -> list[types.Part]:
    """A recorded PartListUnion (a string, a part, or a list of both) as genai parts."""
    if raw is None:
        return []
    if isinstance(raw, str):
        return [types.Part(text=raw)] if raw else []
    if isinstance(raw, dict):
        raw = [raw]
    out: list[types.Part] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, str):
            out.append(types.Part(text=item))
        elif isinstance(item, dict):
            try:
                out.append(types.Part.model_validate(item))
            except ValueError:
                logger.warning("skipped a recorded part that is not a genai Part")
    return out


def _model_parts(message: Message) -> list[types.Part]:
    recorded = _parts(message.get("parts"))
    if recorded:
        return recorded
    parts = _parts(message.get("content"))
    for call in tool_calls(message):
        parts.append(
            types.Part(
                function_call=types.FunctionCall(
                    id=call.get("id"), name=call.get("name"), args=call.get("args") or {}
                )
            )
        )
    return parts


def _responses(message: Message, parts: list[types.Part]) -> list[types.Part]:
    results: dict[str, types.Part] = {}
    for recorded in tool_calls(message):
        for part in _parts(recorded.get("result")):
            if part.function_response is not None:
                results[str(recorded.get("id"))] = part
                break
    out = []
    for part in parts:
        call = part.function_call
        if call is None:
            continue
        found = results.get(str(call.id))
        out.append(
            found
            if found is not None
            else types.Part(
                function_response=types.FunctionResponse(
                    id=call.id, name=call.name, response={"error": INTERRUPTED}
                )
            )
        )
    return out


def history_messages(messages: list[Message]) -> list[Message]:
    """The messages the model's history is built from: user and gemini turns, and
    after a compression its summary first, then the messages it kept (from its
    `keptFrom`) and everything after."""
    turns = ("user", "gemini")
    messages = [m for m in messages if not m.get("partial")]  # shown, never sent back
    last = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("type") == "compression"),
        None,
    )
    if last is None:
        return [m for m in messages if m.get("type") in turns]
    compression = messages[last]
    ids = [m.get("id") for m in messages]
    kept_from = compression.get("keptFrom")
    begin = ids.index(kept_from) if kept_from in ids else last + 1
    kept = [m for m in messages[begin:] if m is not compression and m.get("type") in turns]
    return [compression, *kept]


def message_contents(message: Message, *, agent_name: str) -> list[types.Content]:
    """The genai contents one model-visible message stands for."""
    return [e.content for e in events_from_record([message], agent_name=agent_name) if e.content]


def events_from_record(messages: list[Message], *, agent_name: str) -> list[Event]:
    """The ADK events that rebuild a recorded conversation (see the module docstring)."""
    events: list[Event] = []
    for index, message in enumerate(history_messages(messages)):
        invocation = f"rebuilt-{index}"
        when = _epoch(message.get("timestamp"))
        if message["type"] == "compression":
            events += _compression_events(message, invocation, when, agent_name)
        elif message["type"] == "user":
            parts = _parts(message.get("content"))
            if parts:
                events.append(
                    Event(
                        id=str(message["id"]),
                        invocation_id=invocation,
                        author="user",
                        timestamp=when,
                        content=types.Content(role="user", parts=parts),
                    )
                )
        else:
            events += _model_events(message, invocation, when, agent_name)
    return events


def _compression_events(
    message: CompressionMessage, invocation: str, when: float, agent_name: str
) -> list[Event]:
    """A compression: its summary as the user's turn, acknowledged by the model."""
    summary = str(message.get("summary") or "")
    return [
        Event(
            invocation_id=invocation,
            author="user",
            timestamp=when,
            content=types.Content(role="user", parts=[types.Part(text=summary)]),
        ),
        Event(
            invocation_id=invocation,
            author=agent_name,
            timestamp=when,
            content=types.Content(role="model", parts=[types.Part(text=COMPRESSION_ACK)]),
        ),
    ]


def _model_events(message: Message, invocation: str, when: float, agent_name: str) -> list[Event]:
    """A model answer, then its tool calls' responses (as the user's turn)."""
    parts = _model_parts(message)
    if not parts:
        return []
    events = [
        Event(
            id=str(message["id"]),
            invocation_id=invocation,
            author=agent_name,
            timestamp=when,
            content=types.Content(role="model", parts=parts),
        )
    ]
    responses = _responses(message, parts)
    if responses:
        events.append(
            Event(
                invocation_id=invocation,
                author=agent_name,
                timestamp=when,
                content=types.Content(role="user", parts=responses),
            )
        )
    return events
