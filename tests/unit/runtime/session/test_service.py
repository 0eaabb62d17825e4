"""SessionService with an injected factory (no ADK): what each opening hands the factory,
and what it keeps or removes in the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.config import AgentFlags
from runtime.errors import AuthRequiredError
from runtime.host import HeadlessHost
from runtime.session import (
    OpenRequest,
    SessionNotFoundError,
    SessionService,
    SessionSpec,
    WrongWorkspaceError,
)
from runtime.session.paths import outputs_dir


class Built:
    """What the fake factory returns: the spec it was given."""

    def __init__(self, spec: SessionSpec) -> None:
        self.spec = spec
        self.id = spec.session_id


@pytest.fixture
def box(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    script = tmp_path / "model.jsonl"
    script.write_text("")
    return {
        "flags": AgentFlags(fake_responses=script, sessions_dir=tmp_path / "sessions"),
        "home": tmp_path / "home",
        "work": tmp_path / "work",
        "specs": [],
    }


def _service(box: dict[str, Any], fail: BaseException | None = None) -> SessionService:
    async def create(spec: SessionSpec) -> Any:
        box["specs"].append(spec)
        if fail is not None:
            raise fail
        return Built(spec)

    env = {"HOME": str(box["home"])}
    return SessionService(box["flags"], env, box["home"], create=create)


def _request(box: dict[str, Any], cwd: Path | None = None) -> OpenRequest:
    return OpenRequest(cwd=str(cwd or box["work"]), host_for=lambda _id: HeadlessHost())


async def test_open_records_a_new_session_and_hands_the_factory_its_spec(
    box: dict[str, Any],
) -> None:
    service = _service(box)
    built = await service.open("s1", _request(box))
    spec = built.spec
    assert (spec.session_id, spec.config.workspace, spec.history) == ("s1", box["work"], ())
    assert spec.recording is not None and spec.auth is not None and spec.auth.kind == "fake"
    assert service.store().find("s1") == spec.recording.path
    assert spec.start_source == "startup"  # SessionStart's source


async def test_reopen_restores_the_recorded_history_mode_and_model(box: dict[str, Any]) -> None:
    service = _service(box)
    recording = service.store().create("s1", box["work"])
    recording.record_message({"id": "u1", "type": "user", "content": [{"text": "hi"}]})
    recording.set_metadata(mode="autoEdit", modelChoice="gemini-2.5-flash")
    recording.close()
    built, record = await service.reopen("s1", _request(box))
    spec = built.spec
    assert [m["id"] for m in spec.history] == ["u1"] == [m["id"] for m in record.messages]
    assert spec.start_source == "resume"  # SessionStart's source, as Gemini CLI's --resume
    assert (spec.config.approval_mode, spec.config.model) == ("autoEdit", "gemini-2.5-flash")


async def test_reopen_refuses_an_unknown_id_and_another_workspace(
    box: dict[str, Any], tmp_path: Path
) -> None:
    service = _service(box)
    with pytest.raises(SessionNotFoundError):
        await service.reopen("nope", _request(box))
    service.store().create("s1", box["work"]).close()
    with pytest.raises(WrongWorkspaceError) as wrong:
        await service.reopen("s1", _request(box, tmp_path))
    assert (wrong.value.session_id, wrong.value.workspace) == ("s1", str(box["work"]))
    assert box["specs"] == []


async def test_a_failing_factory_closes_the_new_record(box: dict[str, Any]) -> None:
    service = _service(box, fail=RuntimeError("no"))
    with pytest.raises(RuntimeError):
        await service.open("s1", _request(box))
    (spec,) = box["specs"]
    assert spec.recording is not None and spec.recording._fd is None


async def test_credentials_are_checked_before_anything_is_recorded(box: dict[str, Any]) -> None:
    box["flags"] = AgentFlags(sessions_dir=box["flags"].sessions_dir)
    service = _service(box)
    with pytest.raises(AuthRequiredError):
        await service.open("s1", _request(box))
    assert service.store().find("s1") is None


async def test_delete_removes_the_record_and_its_tool_outputs(box: dict[str, Any]) -> None:
    service = _service(box)
    built = await service.open("s1", _request(box))
    outputs = outputs_dir(built.spec.config.temp_dir, "s1")
    outputs.mkdir(parents=True)
    built.spec.recording.close()
    assert service.delete("s1") is True
    assert not outputs.exists() and service.store().find("s1") is None
    assert service.delete("s1") is False
