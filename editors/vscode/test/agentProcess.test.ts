// The real agent (adk-acp with a scripted model) driven through AgentProcess and the
// official SDK, with the editor-side handlers of this extension: permission broker,
// fs handler, terminal manager. ADK_ACP_AGENT holds the agent's argv as JSON (the
// pytest wrapper sets it); without it this file reports a skip, which the wrapper
// counts as a failure.
import type * as acp from "@agentclientprotocol/sdk/unstable";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
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
    proposedText: () => undefined,
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

/** A scripted answer of distinct words (a repeated phrase would look like a loop to the agent). */
const words = (stem: string): string => text(Array.from({ length: 30 }, (_, i) => `${stem}-${i}`).join(" "));

/** A process of the real agent with this extension's capabilities; its updates go into `model`. */
function agentInto(model: ChatModel, script: string, cwd: string, log: string[]): AgentProcess {
  const [command, ...args] = JSON.parse(argv!) as string[];
  const refuse = async (): Promise<never> => {
    throw new Error("not in this test");
  };
  return new AgentProcess({
    command,
    args: [...args, "--fake-responses", script],
    env: { ...process.env, GEMINI_API_KEY: "AIza" + "Q".repeat(35) },
    cwd,
    spawn,
    log: (line) => log.push(line),
    secrets: () => [],
    handlers: {
      requestPermission: refuse,
      sessionUpdate: (p) => void model.apply(p.update),
      readTextFile: refuse,
      writeTextFile: refuse,
      createTerminal: refuse,
      terminalOutput: refuse,
      waitForTerminalExit: refuse,
      killTerminal: refuse,
      releaseTerminal: refuse,
    },
    onExit: () => undefined,
  });
}

test("today's ACP against the real agent: the chat opts in to notices and compactions, shows them, and they come back on a reload", { skip: argv ? false : "ADK_ACP_AGENT is not set", timeout: 120_000 }, async () => {
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), "adk-acp-ext-")));
  // A wrongly typed setting: the agent says so in a notice before the first answer.
  mkdirSync(join(workspace, ".gemini"));
  writeFileSync(join(workspace, ".gemini", "settings.json"), JSON.stringify({ model: { maxSessionTurns: "x" } }));
  const script = join(workspace, "..", `model-compact-${Date.now()}.jsonl`);
  writeFileSync(script, [words("answer-one"), words("answer-two"), text("<state_snapshot>counted to two</state_snapshot>"), text("<state_snapshot>counted to two</state_snapshot>")].join("\n") + "\n");
  const log: string[] = [];
  const live = new ChatModel();
  const agent = agentInto(live, script, workspace, log);
  const shown = (model: ChatModel): string[] =>
    model.items.flatMap((i) =>
      i.kind === "notice" ? [`notice ${i.level} ${i.text.split(" (")[0]}${i.local ? " local" : ""}`]
        : i.kind === "compaction" ? [`compaction ${i.status} ${i.text}`] : []);
  let sessionId = "";
  try {
    await agent.start();
    const initialize = log.find((l) => l.startsWith("→ ") && l.includes('"initialize"'))!;
    const sent = JSON.parse(initialize.slice(2)) as { params: { clientCapabilities: Record<string, unknown> } };
    assert.deepEqual(sent.params.clientCapabilities["session"], { notices: {}, compaction: {} });
    assert.deepEqual([sent.params.clientCapabilities["subagents"], sent.params.clientCapabilities["plan"]], [{}, {}]);
    sessionId = (await agent.agent.request("session/new", { cwd: workspace, mcpServers: [] })).sessionId;
    for (const t of ["one", "two", "/compress"]) {
      const done = await agent.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: t }] });
      assert.equal(done.stopReason, "end_turn");
    }
    // The settings notice is a notice line (not answer text); the compaction its own line, with the summary.
    assert.deepEqual(shown(live), ["notice info Some settings were ignored", "compaction completed <state_snapshot>counted to two</state_snapshot>"]);
    assert.ok(log.some((l) => l.startsWith("← ") && /"sessionUpdate":\s*"notice"/.test(l)), "a notice update, not marked text");
    assert.ok(!live.items.some((i) => i.kind === "agent" && i.text.includes("settings were ignored")));
  } finally {
    agent.stop();
  }
  // A reload (another process, session/load): both are replayed where they were.
  const replayed = new ChatModel();
  const again = agentInto(replayed, script, workspace, log);
  try {
    await again.start();
    await again.agent.request("session/load", { sessionId, cwd: workspace, mcpServers: [] });
    assert.deepEqual(shown(replayed), shown(live));
  } finally {
    again.stop();
  }
});
