// The real agent (adk-acp with a scripted model) driven through AgentProcess and the
// official SDK, with the editor-side handlers of this extension: permission broker,
// fs handler, terminal manager. ADK_ACP_AGENT holds the agent's argv as JSON (the
// pytest wrapper sets it); without it this file reports a skip, which the wrapper
// counts as a failure.
import type * as acp from "@agentclientprotocol/sdk";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { AgentProcess } from "../src/agentProcess";
import { ChatModel } from "../src/chatModel";
import { DiffStore, type UriLike } from "../src/diffDocuments";
import { FsHandler } from "../src/fsHandler";
import { PermissionBroker } from "../src/permissions";
import { TerminalManager } from "../src/terminals";

const argv = process.env["ADK_ACP_AGENT"];

function call(name: string, args: Record<string, unknown>): string {
  const part = { functionCall: { name, args } };
  return JSON.stringify({ method: "generateContentStream", response: [{ candidates: [{ content: { role: "model", parts: [part] } }] }] });
}
function text(answer: string): string {
  const candidate = { content: { role: "model", parts: [{ text: answer }] }, finishReason: "STOP" };
  return JSON.stringify({ method: "generateContentStream", response: [{ candidates: [candidate] }] });
}

test("the extension's client side against the real agent: edit with diff approval, terminal, cancel", { skip: argv ? false : "ADK_ACP_AGENT is not set", timeout: 120_000 }, async () => {
  const [command, ...args] = JSON.parse(argv!) as string[];
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), "adk-acp-ext-")));
  writeFileSync(join(workspace, "a.txt"), "alpha\n");
  const script = join(workspace, "..", `model-${Date.now()}.jsonl`);
  writeFileSync(script, [
    call("replace", { file_path: "a.txt", instruction: "b", old_string: "alpha", new_string: "beta" }),
    text("edited"),
    call("run_shell_command", { command: "echo from-vscode-terminal" }),
    text("ran"),
    call("run_shell_command", { command: "sleep 60" }),
    text("never"),
  ].join("\n") + "\n");
  const uris = { from: (c: { scheme: string; path: string; query: string }): UriLike => ({ ...c, toString: () => `${c.scheme}:${c.path}?${c.query}` }) };
  const diffsShown: string[] = [];
  const store = new DiffStore(uris);
  const broker = new PermissionBroker(store, {
    showDiff: async (p) => {
      diffsShown.push(`${p.filePath}|${store.provide(p.original)}|${store.provide(p.proposed)}`);
    },
    closeDiff: async () => undefined,
    ask: async (q) => q.options.find((o) => o.kind === "allow_once")?.optionId,
    pendingChanged: () => undefined,
    now: Date.now,
    metric: () => undefined,
  });
  const edits: string[] = [];
  const files = new FsHandler({
    openText: () => undefined,
    readDisk: async (p) => readFileSync(p, "utf8"),
    writeThroughEditor: async (p, c) => {
      edits.push(p);
      writeFileSync(p, c);
    },
  });
  const screens: string[] = [];
  let terminalStarted: () => void = () => undefined;
  const terminals = new TerminalManager({
    spawn,
    createTerminal: (_name, pty) => {
      pty.onDidWrite((d) => screens.push(d));
      pty.open();
      terminalStarted();
      return { dispose: () => undefined };
    },
    killGroup: (pid, signal) => process.kill(-pid, signal),
  }, process.env);
  const model = new ChatModel();
  const log: string[] = [];
  const agent = new AgentProcess({
    command,
    args: [...args, "--fake-responses", script],
    env: { ...process.env, GEMINI_API_KEY: "AIza" + "Q".repeat(35) },
    cwd: workspace,
    spawn,
    log: (line) => log.push(line),
    secrets: () => [],
    handlers: {
      requestPermission: (p) => broker.request(p),
      sessionUpdate: (p) => void model.apply(p.update),
      readTextFile: (p) => files.read(p),
      writeTextFile: (p) => files.write(p),
      createTerminal: (p) => terminals.create(p),
      terminalOutput: (p) => terminals.output(p),
      waitForTerminalExit: (p) => terminals.waitForExit(p),
      killTerminal: (p) => terminals.kill(p),
      releaseTerminal: (p) => terminals.release(p),
    },
    onExit: () => undefined,
  });
  try {
    const init = await agent.start();
    assert.equal(init.agentCapabilities?.loadSession, true);
    const session = await agent.agent.request("session/new", { cwd: workspace, mcpServers: [] });
    assert.ok((session.configOptions ?? []).some((o: acp.SessionConfigOption) => o.category === "model"));
    const prompt = (t: string) => agent.agent.request("session/prompt", { sessionId: session.sessionId, prompt: [{ type: "text", text: t }] });
    assert.equal((await prompt("edit a.txt")).stopReason, "end_turn");
    assert.deepEqual(diffsShown, [`${join(workspace, "a.txt")}|alpha\n|beta\n`]);
    assert.deepEqual(edits, [join(workspace, "a.txt")]);
    assert.equal(readFileSync(join(workspace, "a.txt"), "utf8"), "beta\n");
    assert.equal((await prompt("run")).stopReason, "end_turn");
    assert.ok(screens.join("").includes("from-vscode-terminal"), screens.join(""));
    assert.ok(model.items.some((i) => i.kind === "agent" && i.text === "ran"));
    assert.ok(model.state.commands.some((c) => c.name === "help"));
    const started = new Promise<void>((resolve) => { terminalStarted = resolve; });
    const long = prompt("run a long command");
    await started;
    broker.cancelAll(session.sessionId);
    await agent.agent.notify("session/cancel", { sessionId: session.sessionId });
    assert.equal((await long).stopReason, "cancelled");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(terminals.running, 0);
    assert.ok(log.some((l) => l.startsWith("→ ") && l.includes("session/prompt")));
    assert.ok(!log.join("\n").includes("Q".repeat(35)));
  } finally {
    agent.stop();
    terminals.dispose();
  }
});
