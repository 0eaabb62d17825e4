import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { AgentNotInstalled, resolveAgentCommand } from "../src/agentCommand";
import { FsHandler, sliceLines } from "../src/fsHandler";
import { OutputBuffer } from "../src/outputBuffer";
import { buildPrompt } from "../src/prompt";
import { redact } from "../src/redact";
import { TerminalManager, type PseudoterminalLike } from "../src/terminals";

test("reads prefer the open (unsaved) buffer and honour line/limit", async () => {
  const writes: [string, string][] = [];
  const handler = new FsHandler({
    openText: (p) => (p === "/w/open.txt" ? "unsaved 1\nunsaved 2\nunsaved 3\n" : undefined),
    readDisk: async (p) => {
      if (p === "/w/disk.txt") return "disk\n";
      throw new Error(`ENOENT: ${p}`);
    },
    writeThroughEditor: async (p, c) => {
      writes.push([p, c]);
    },
  });
  assert.equal((await handler.read({ sessionId: "s", path: "/w/open.txt" })).content, "unsaved 1\nunsaved 2\nunsaved 3\n");
  assert.equal((await handler.read({ sessionId: "s", path: "/w/open.txt", line: 2, limit: 1 })).content, "unsaved 2\n");
  assert.equal((await handler.read({ sessionId: "s", path: "/w/disk.txt" })).content, "disk\n");
  await assert.rejects(handler.read({ sessionId: "s", path: "/w/missing.txt" }), /ENOENT/);
  await assert.rejects(handler.read({ sessionId: "s", path: "relative.txt" }), /absolute/);
  await handler.write({ sessionId: "s", path: "/w/new.txt", content: "x" });
  assert.deepEqual(writes, [["/w/new.txt", "x"]]);
});

test("sliceLines", () => {
  assert.equal(sliceLines("a\nb\nc", 2), "b\nc");
  assert.equal(sliceLines("a\nb\nc", 1, 2), "a\nb\n");
  assert.equal(sliceLines("a\nb\nc", 5, 2), "");
});

test("the output buffer keeps the last bytes without splitting a character", () => {
  const buffer = new OutputBuffer(5);
  buffer.push(Buffer.from("abc"));
  assert.equal(buffer.truncated, false);
  buffer.push(Buffer.from("déf")); // é is two bytes: "abcdéf" is 7 bytes
  assert.equal(buffer.truncated, true);
  assert.equal(buffer.text(), "cdéf"); // the last 5 bytes: c d é(2) f
  const small = new OutputBuffer(2);
  small.push(Buffer.from("xé"));
  assert.equal(small.text(), "é");
});

function fakeTerminalHost(openLater = false) {
  const shown: string[] = [];
  const terminals: { name: string; pty: PseudoterminalLike; disposed: boolean }[] = [];
  return {
    shown,
    terminals,
    host: {
      spawn,
      createTerminal: (name: string, pty: PseudoterminalLike) => {
        const entry = { name, pty, disposed: false };
        pty.onDidWrite((data) => shown.push(data));
        if (!openLater) pty.open();
        terminals.push(entry);
        return { dispose: () => { entry.disposed = true; } };
      },
      killGroup: (pid: number, signal: NodeJS.Signals) => process.kill(-pid, signal),
    },
  };
}

test("a terminal runs the command, shows and captures its output, waits for its exit", async () => {
  const fake = fakeTerminalHost(true);
  const manager = new TerminalManager(fake.host, process.env);
  const { terminalId } = await manager.create({ sessionId: "s", command: "sh", args: ["-c", "echo one; echo two >&2; exit 3"], env: [{ name: "X", value: "1" }] });
  const exit = await manager.waitForExit({ sessionId: "s", terminalId });
  assert.deepEqual(exit, { exitCode: 3, signal: null });
  assert.deepEqual(fake.shown, []); // VS Code opens the terminal later: nothing written before is lost
  fake.terminals[0]!.pty.open();
  const output = await manager.output({ sessionId: "s", terminalId });
  assert.ok(output.output.includes("one\n") && output.output.includes("two\n"));
  assert.equal(output.truncated, false);
  assert.deepEqual(output.exitStatus, { exitCode: 3, signal: null });
  const screen = fake.shown.join("");
  assert.ok(screen.includes("$ sh -c"), screen);
  assert.ok(screen.includes("one\r\n"), screen);
  assert.ok(screen.includes("[exit code 3]"), screen);
  await manager.release({ sessionId: "s", terminalId });
  await assert.rejects(manager.output({ sessionId: "s", terminalId }), /no terminal/);
});

test("outputByteLimit truncates from the start; kill stops the whole process group", async () => {
  const fake = fakeTerminalHost();
  const manager = new TerminalManager(fake.host, process.env);
  const limited = await manager.create({ sessionId: "s", command: "sh", args: ["-c", "printf 0123456789"], outputByteLimit: 4 });
  await manager.waitForExit({ sessionId: "s", terminalId: limited.terminalId });
  assert.deepEqual(await manager.output({ sessionId: "s", terminalId: limited.terminalId }), {
    output: "6789", truncated: true, exitStatus: { exitCode: 0, signal: null },
  });
  const long = await manager.create({ sessionId: "s", command: "sh", args: ["-c", "sleep 30 & sleep 30; wait"] });
  assert.equal(manager.running, 1);
  await manager.kill({ sessionId: "s", terminalId: long.terminalId });
  const exit = await manager.waitForExit({ sessionId: "s", terminalId: long.terminalId });
  assert.equal(exit.signal, "SIGKILL");
  const released = await manager.create({ sessionId: "s", command: "sleep", args: ["30"] });
  await manager.release({ sessionId: "s", terminalId: released.terminalId });
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(manager.running, 0);
  const missing = await manager.create({ sessionId: "s", command: "/no/such/program" });
  assert.equal((await manager.waitForExit({ sessionId: "s", terminalId: missing.terminalId })).exitCode, 127);
  manager.dispose();
});

test("the agent command: setting, then PATH, then the workspace's .venv; otherwise a clear error", () => {
  const base = { args: ["--x"], pathEnv: "/a:/b", workspaceFolders: ["/ws"], platform: "linux" as NodeJS.Platform };
  assert.deepEqual(resolveAgentCommand({ ...base, setting: "/opt/agent", isExecutable: () => false }), { command: "/opt/agent", args: ["--x"], source: "setting" });
  assert.equal(resolveAgentCommand({ ...base, setting: "", isExecutable: (f) => f === "/b/adk-acp" }).command, "/b/adk-acp");
  assert.equal(resolveAgentCommand({ ...base, setting: "", isExecutable: (f) => f === "/ws/.venv/bin/adk-acp" }).source, "workspace-venv");
  assert.throws(() => resolveAgentCommand({ ...base, setting: "", isExecutable: () => false }), (e: unknown) => e instanceof AgentNotInstalled && /not installed/.test(e.message));
});

test("secrets are redacted from the log", () => {
  const key = "AIza" + "S".repeat(35);
  const line = JSON.stringify({ method: "authenticate", params: { _meta: { "api-key": "plain-secret-value" } }, env: [{ GEMINI_API_KEY: key }] });
  const out = redact(line + " Bearer abcdefghijkl " + key, ["my-own-secret"]);
  assert.ok(!out.includes(key) && !out.includes("plain-secret-value") && !out.includes("abcdefghijkl"), out);
  assert.equal(redact("token my-own-secret here", ["my-own-secret"]), "token *** here");
});

test("prompts: files as resource links, the selection embedded (or quoted)", () => {
  const mentions = [
    { kind: "file" as const, path: "/w/a b.txt", label: "a b.txt" },
    { kind: "file" as const, path: "/w/a b.txt", label: "a b.txt" },
    { kind: "selection" as const, path: "/w/c.py", label: "c.py:2-3", startLine: 2, endLine: 3, text: "x = 1" },
  ];
  const blocks = buildPrompt("explain", mentions, true);
  assert.deepEqual(blocks[0], { type: "text", text: "explain" });
  assert.deepEqual(blocks[1], { type: "resource_link", uri: "file:///w/a%20b.txt", name: "a b.txt" });
  assert.equal(blocks.length, 3);
  assert.deepEqual(blocks[2], { type: "resource", resource: { uri: "file:///w/c.py#L2-3", text: "x = 1", mimeType: "text/plain" } });
  const plain = buildPrompt("explain", mentions.slice(2), false);
  assert.equal(plain[1]?.type, "text");
});

test("an agent that dies at start: the start fails, and the exit report carries its last stderr lines", async () => {
  const { AgentProcess } = await import("../src/agentProcess");
  const exits: { code: number | null; stderrTail: string[]; spawnError?: string }[] = [];
  const make = (command: string, args: string[]) =>
    new AgentProcess({
      command,
      args,
      env: process.env,
      cwd: undefined,
      spawn,
      log: () => undefined,
      secrets: () => [],
      handlers: {} as never,
      onExit: (info) => exits.push(info),
    });
  await assert.rejects(make("sh", ["-c", "echo 'Traceback: boom' >&2; echo 'key AIza" + "X".repeat(35) + "' >&2; exit 3"]).start());
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(exits[0]?.code, 3);
  assert.deepEqual(exits[0]?.stderrTail, ["Traceback: boom", "key ***"]);
  await assert.rejects(make("/no/such/adk-acp", []).start(), /ENOENT/);
  await new Promise((r) => setTimeout(r, 50));
  assert.match(exits[1]?.spawnError ?? "", /ENOENT/);
});
