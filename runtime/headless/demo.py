"""`adk-acp --demo`: the agent at work with no key and no network.

A scripted model (`DemoModel`, answering through the fake ContentGenerator) runs on
the real engine (session, scheduler, policy, tools) in a temporary workspace holding
one small file. The model reads the file, proposes an edit — shown as a diff and
asked about — and the edit is made. The question is asked on the terminal when
stdin is one; otherwise it is answered "yes" automatically and says so. Nothing of
the user's is read or written: the run has its own HOME inside the temporary
folder (no settings, policies or hooks of the user's apply) and is not recorded.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from runtime.config import AgentFlags
from runtime.headless.run import HeadlessRun, run_prompt
from runtime.headless.terminal import AutoAnswers, TerminalHost, TtyAnswers
from runtime.models.content_generator import ContentGenerator
from runtime.models.fake_generator import FakeContentGenerator

if TYPE_CHECKING:
    from google.genai import types

DEMO_MODEL = "gemini-2.5-flash"
FILE_NAME = "hello.py"
HELLO = 'def greet(name):\n    return "Hello, world!"\n\n\nprint(greet("Ada"))\n'
OLD_LINE = '    return "Hello, world!"'
NEW_LINE = '    return f"Hello, {name}!"'
PROMPT = f"greet() in {FILE_NAME} ignores the name it is given. Please fix it."
CHUNK_DELAY_S = 0.02  # so the answer is seen arriving in pieces

INTRO = """adk-acp demo: a scripted model (no key, no network) on the real agent,
in a temporary workspace {workspace} holding {file}.
"""
OUTRO = """
{file} now reads:
{text}
That was the real scheduler, policy, diff and edit, with a scripted model.
Next: `adk-acp --login` (or set GEMINI_API_KEY), then `adk-acp -p "your question"`
in a project, or add adk-acp to your editor (see the README).
"""


def _line(text: str, call: dict[str, Any] | None = None) -> dict[str, Any]:
    """One scripted model answer: `text` in a few streamed chunks, then `call`."""
    words = text.split(" ")
    pieces = [" ".join(words[i : i + 3]) + " " for i in range(0, len(words), 3)]
    pieces[-1] = pieces[-1].rstrip(" ")
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": p}]}}]} for p in pieces
    ]
    if call is not None:
        part = {"functionCall": call}
        chunks.append({"candidates": [{"content": {"role": "model", "parts": [part]}}]})
    last = chunks[-1]["candidates"][0]
    last["finishReason"] = "STOP"
    chunks[-1]["usageMetadata"] = {
        "promptTokenCount": 900,
        "candidatesTokenCount": 40,
        "totalTokenCount": 940,
    }
    return {"method": "generateContentStream", "response": chunks}


def _rejected(contents: list[types.Content]) -> bool:
    """Whether the last tool result the model got was an error (the edit rejected)."""
    for content in reversed(contents):
        for part in content.parts or ():
            if part.function_response is not None:
                return "error" in (part.function_response.response or {})
    return False


class DemoModel(ContentGenerator):
    """The demo's three answers, chosen by how far the conversation has got: read the
    file, replace the line, then say what happened (done, or left as it was)."""

    def _script(self, contents: list[types.Content]) -> dict[str, Any]:
        step = sum(1 for c in contents if c.role == "model")
        if step == 0:
            return _line(
                f"I'll read {FILE_NAME} first.",
                {"name": "read_file", "args": {"file_path": FILE_NAME}},
            )
        if step == 1:
            return _line(
                "greet() returns a fixed string. I'll make it use the name:",
                {
                    "name": "replace",
                    "args": {
                        "file_path": FILE_NAME,
                        "instruction": "Greet the given name instead of the world.",
                        "old_string": OLD_LINE,
                        "new_string": NEW_LINE,
                    },
                },
            )
        if _rejected(contents):
            return _line(f"Understood: the edit was not made, {FILE_NAME} is unchanged.")
        return _line(f'Done: greet() now uses the name, so {FILE_NAME} prints "Hello, Ada!".')

    async def generate_content(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> types.GenerateContentResponse:
        fake = FakeContentGenerator([self._script(contents)])
        return await fake.generate_content(model=model, contents=contents, config=config)

    async def generate_content_stream(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        fake = FakeContentGenerator([self._script(contents)], chunk_delay_s=CHUNK_DELAY_S)
        async for chunk in fake.generate_content_stream(
            model=model, contents=contents, config=config
        ):
            yield chunk


async def run_demo(*, stdout: IO[str], stderr: IO[str], stdin: IO[str], tty: bool) -> int:
    """Run the demo in a fresh temporary folder (removed at the end); the exit code."""
    with tempfile.TemporaryDirectory(prefix="adk-acp-demo-") as folder:
        root = Path(folder).resolve()
        workspace, home = root / "workspace", root / "home"
        workspace.mkdir()
        home.mkdir()
        target = workspace / FILE_NAME
        target.write_text(HELLO, encoding="utf-8")
        stderr.write(INTRO.format(workspace=workspace, file=FILE_NAME))
        stderr.write(f"\n> {PROMPT}\n\n")
        stderr.flush()
        answers = (
            TtyAnswers(stdin)
            if tty
            else AutoAnswers("y", stderr, "answered automatically: stdin is not a terminal")
        )
        run = HeadlessRun(
            prompt=PROMPT,
            output_format="text",
            workspace=workspace,
            flags=AgentFlags(model=DEMO_MODEL, approval_mode="default"),
            env={"HOME": str(home)},
            record=False,
            generator=DemoModel(),
            home=home,
        )
        code = await run_prompt(
            run,
            host=TerminalHost(answers, stderr, workspace=workspace),
            stdout=stdout,
            stderr=stderr,
        )
        stdout.flush()
        text = target.read_text(encoding="utf-8")
        stderr.write(OUTRO.format(file=FILE_NAME, text=text))
        stderr.flush()
    return code
