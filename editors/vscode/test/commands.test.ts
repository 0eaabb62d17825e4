// The commands and the chat view's messages, routed to fakes of the pieces; the API
// key store, the metrics file and the chat surface (status bar, error reports).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { UntrustedWorkspace } from "../src/agentCommand";
import { ApiKeyStore, SECRET_KEY, type KeyHost } from "../src/apiKey";
import { handleViewMessage, registerCommands, type CommandHost, type FileUri, type Pieces } from "../src/commands";
import type { Mention } from "../src/messages";
import { fileMetrics } from "../src/metrics";
import { fakeSurface, type FakeSurface } from "./fakes";

const selection: Mention = { kind: "selection", path: "/w/a.ts", label: "a.ts:1-2", startLine: 1, endLine: 2, text: "x" };

interface Rig {
  host: CommandHost;
  pieces: Pieces;
  fake: FakeSurface;
  commands: Map<string, (...args: unknown[]) => unknown>;
  calls: string[];
  selected: Mention | null;
  active: FileUri | undefined;
  /** What the chat's opening input answers to the focus command. */
  opening: boolean;
}

function rig(): Rig {
  const fake = fakeSurface();
  const calls: string[] = [];
  const r = { fake, calls, commands: new Map(), selected: null, active: undefined, opening: false } as unknown as Rig;
  const call =
    (name: string) =>
    async (...args: unknown[]): Promise<void> =>
      void calls.push(args.length ? `${name} ${JSON.stringify(args)}` : name);
  r.host = {
    register: (id, run) => void r.commands.set(id, run as (...args: unknown[]) => unknown),
    focusChat: call("focusChat"),
    workbenchCaughtUp: call("workbenchCaughtUp"),
    openingInput: () => {
      calls.push("openingInput");
      return r.opening;
    },
    activeDocument: () => r.active,
    parseUri: (text) => {
      if (!text.includes(":") && !text.startsWith("/")) throw new Error("not a URI");
      return text.startsWith("/") ? { scheme: "file", fsPath: text } : { scheme: text.split(":")[0]!, fsPath: text.replace(/^\w+:\/\//, "") };
    },
  };
  let running = false;
  r.pieces = {
    surface: fake.surface,
    supervisor: { restart: call("restart") },
    sessions: {
      newChat: call("newChat"),
      history: call("history"),
      cancel: call("cancel"),
      prompt: call("prompt"),
      setConfig: call("setConfig"),
      rendered: (...args: unknown[]) => void calls.push(`rendered ${JSON.stringify(args)}`),
      ensureSession: call("ensureSession"),
      get running() {
        return running;
      },
      session: null,
    },
    approvals: {
      answer: (...args: unknown[]) => void calls.push(`answer ${JSON.stringify(args)}`),
      answerFromEditor: (...args: unknown[]) => void calls.push(`answerFromEditor ${JSON.stringify(args)}`),
      chooseOption: call("chooseOption"),
    },
    editor: {
      undoLastEdit: call("undoLastEdit"),
      openLocation: call("openLocation"),
      currentSelection: () => r.selected,
      fileMentions: (uris: FileUri[]) =>
        uris.filter((u) => u.scheme === "file").map((u) => ({ kind: "file", path: u.fsPath, label: u.fsPath.slice(1) })),
      searchFiles: async (query: string) => [{ path: `/w/${query}.ts`, label: `${query}.ts` }],
    },
    keys: { set: async () => true, forget: call("forget") },
  } as unknown as Pieces;
  running = false;
  registerCommands(r.host, r.pieces);
  return r;
}

const mentions = (fake: FakeSurface): unknown[] => fake.posted.filter((m) => m.type === "mention").map((m) => m.type === "mention" && m.mention);

test("every command of package.json is registered, and each reaches its piece", async () => {
  const r = rig();
  const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as {
    contributes: { commands: { command: string }[] };
  };
  assert.deepEqual([...r.commands.keys()].sort(), manifest.contributes.commands.map((c) => c.command).sort());
  for (const id of ["adkAcp.newChat", "adkAcp.history", "adkAcp.cancel", "adkAcp.restart", "adkAcp.undoLastEdit", "adkAcp.chooseOption"]) {
    await r.commands.get(id)!();
  }
  await r.commands.get("adkAcp.approve")!();
  await r.commands.get("adkAcp.reject")!();
  await r.commands.get("adkAcp.setApiKey")!();
  await r.commands.get("adkAcp.clearApiKey")!();
  await r.commands.get("adkAcp.focus")!();
  assert.deepEqual(r.calls, [
    "newChat",
    "history",
    "cancel",
    "restart",
    "undoLastEdit",
    "chooseOption",
    'answerFromEditor [["allow_once","allow_always"]]',
    'answerFromEditor [["reject_once","reject_always"]]',
    "restart",
    "forget",
    "openingInput",
    "focusChat [false]",
  ]);
  assert.deepEqual(r.fake.posted.at(-1), { type: "focus" });
});

test("the focus command on the chat's first open: the opening input first, then the reveal, no focus into the webview", async () => {
  const r = rig();
  r.opening = true;
  await r.commands.get("adkAcp.focus")!();
  assert.deepEqual(r.calls, ["openingInput", "workbenchCaughtUp", "focusChat [true]"]);
  assert.deepEqual(r.fake.posted, []);
  // Add to Chat keeps to the chat's composer: it never asks for the opening input.
  r.calls.length = 0;
  await r.commands.get("adkAcp.addToChat")!({ scheme: "file", fsPath: "/w/one.ts" });
  assert.deepEqual(r.calls, ["focusChat"]);
});

test("Add to Chat: the editor's file, the explorer's selected files, else the selection or the active file", async () => {
  const r = rig();
  const add = r.commands.get("adkAcp.addToChat")!;
  await add({ scheme: "file", fsPath: "/w/one.ts" });
  assert.deepEqual(mentions(r.fake), [{ kind: "file", path: "/w/one.ts", label: "w/one.ts" }]);
  assert.deepEqual(r.calls, ["focusChat"]);
  await add({ scheme: "file", fsPath: "/w/one.ts" }, [{ scheme: "file", fsPath: "/w/two.ts" }, { scheme: "file", fsPath: "/w/three.ts" }]);
  assert.equal(mentions(r.fake).length, 3);
  r.selected = selection;
  await add();
  assert.deepEqual(mentions(r.fake).at(-1), selection);
  r.selected = null;
  r.active = { scheme: "file", fsPath: "/w/active.ts" };
  await add();
  assert.deepEqual(mentions(r.fake).at(-1), { kind: "file", path: "/w/active.ts", label: "w/active.ts" });
  const before = r.calls.length;
  await add({ scheme: "untitled", fsPath: "Untitled-1" });
  assert.equal(r.calls.length, before, "nothing to mention: the chat is not revealed");
  await r.commands.get("adkAcp.mentionSelection")!();
  assert.equal(r.calls.length, before);
});

test("the view's messages: ready sends the transcript and starts a session; the rest reach their piece", async () => {
  const r = rig();
  const handle = (m: Parameters<typeof handleViewMessage>[2]): Promise<void> => handleViewMessage(r.host, r.pieces, m);
  await handle({ type: "ready" });
  assert.deepEqual(r.fake.posted.slice(0, 2), [
    { type: "ops", ops: r.fake.surface.model.snapshot() },
    { type: "turn", running: false },
  ]);
  await handle({ type: "prompt", text: "hi", mentions: [] });
  await handle({ type: "config", id: "mode", value: "plan" });
  await handle({ type: "open", path: "/w/a.ts", line: 3 });
  await handle({ type: "permission", key: "perm-1", optionId: "yes" });
  await handle({ type: "rendered", id: "i", length: 1, at: 2 });
  assert.deepEqual(r.calls, [
    "ensureSession",
    'prompt ["hi",[]]',
    'setConfig ["mode","plan"]',
    'openLocation ["/w/a.ts",3]',
    'answer ["perm-1","yes"]',
    'rendered ["i",1,2,null,null]',
  ]);
  r.selected = selection;
  await handle({ type: "searchFiles", requestId: 7, query: "main" });
  assert.deepEqual(r.fake.posted.at(-1), { type: "files", requestId: 7, files: [{ path: "/w/main.ts", label: "main.ts" }], selection });
  await handle({ type: "dropped", uris: ["file:///w/d.ts", "/w/e.ts", "not a uri", "https://example.com/x"] });
  assert.deepEqual(mentions(r.fake), [
    { kind: "file", path: "/w/d.ts", label: "w/d.ts" },
    { kind: "file", path: "/w/e.ts", label: "w/e.ts" },
  ]);
  assert.deepEqual(r.fake.log.lines, ["warn dropped something that is not a file: not a uri"]);
});

test("the API key: asked once after auth_required (unless the setting is off), set, forgotten", async () => {
  const secrets = new Map<string, string>();
  const info: string[] = [];
  let allowed = true;
  let typed: string | undefined = "  key-1  ";
  const host: KeyHost = {
    secretGet: async (n) => secrets.get(n),
    secretStore: async (n, v) => void secrets.set(n, v),
    secretDelete: async (n) => void secrets.delete(n),
    input: async () => typed,
    askAllowed: () => allowed,
    showInfo: (m) => void info.push(m),
  };
  const keys = new ApiKeyStore(host);
  assert.equal(await keys.ask(), true);
  assert.equal(await keys.get(), "key-1");
  allowed = false;
  assert.equal(await keys.ask(), false);
  typed = undefined;
  assert.equal(await keys.set(), false);
  typed = "key-2";
  assert.equal(await keys.set(), true);
  assert.equal(secrets.get(SECRET_KEY), "key-2");
  await keys.forget();
  assert.equal(secrets.size, 0);
  assert.deepEqual(info, ["adk-acp: the API key is forgotten."]);
});

test("metrics: one JSON line per measurement when a file is named, none otherwise, never an error", () => {
  const lines: [string, string][] = [];
  fileMetrics({ file: undefined, append: (f, l) => void lines.push([f, l]), now: () => 5 })("x", 1);
  assert.equal(lines.length, 0);
  fileMetrics({ file: "/m.jsonl", append: (f, l) => void lines.push([f, l]), now: () => 5 })("render_ms", 12, { length: 3 });
  assert.deepEqual(lines, [["/m.jsonl", '{"name":"render_ms","value":12,"at":5,"length":3}\n']]);
  const failing = fileMetrics({ file: "/m", append: () => { throw new Error("EACCES"); }, now: () => 0 });
  assert.doesNotThrow(() => failing("x", 1));
});

test("the status bar names the model and the state; errors offer what fixes them", async () => {
  const { surface, status, context, errors, log } = fakeSurface();
  const fake = fakeSurface();
  surface.post(surface.model.setState({ configOptions: [{ id: "m", name: "Model", category: "model", currentValue: "g", options: [{ value: "g", name: "Gemini" }] }] }));
  surface.setStatus("thinking");
  assert.equal(status.at(-1), "$(loading~spin) adk-acp: Gemini · thinking");
  assert.equal(context.get("adkAcp.busy"), true);
  surface.setStatus("idle");
  assert.equal(context.get("adkAcp.busy"), false);
  surface.reportError(new UntrustedWorkspace());
  surface.reportError(new Error("adk-acp could not start (x): boom"));
  surface.reportError("plain");
  assert.deepEqual(errors.map((e) => e.actions), [["Manage Workspace Trust"], ["Open Settings", "Show Log"], ["Show Log"]]);
  assert.equal(log.lines.length, 3);
  fake.errorChoice = "Manage Workspace Trust";
  fake.surface.reportError(new UntrustedWorkspace());
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(fake.opened, ["trust"]);
});
