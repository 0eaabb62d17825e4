// Session and turn control with a fake VS Code side, a fake supervisor and a fake agent.

import assert from "node:assert/strict";
import { test } from "node:test";
import type * as acp from "@agentclientprotocol/sdk/unstable";
import { SessionControl, type SessionHost, type SessionPick } from "../src/sessions";
import type { AgentSupervisor } from "../src/supervisor";
import { FakeAgent, fakeSurface, notices, recordMetrics, type FakeSurface } from "./fakes";

const chunk = (sessionId: string, text: string): acp.SessionNotification => ({
  sessionId,
  update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
});

interface Rig {
  sessions: SessionControl;
  fake: FakeSurface;
  agent: FakeAgent;
  restarts: number;
  cancelled: (string | undefined)[];
  tools: string[];
  info: string[];
  picks: SessionPick[][];
  metrics: ReturnType<typeof recordMetrics>["seen"];
  host: SessionHost & { keyGiven: boolean; asked: number; choose: (picks: SessionPick[]) => SessionPick | undefined };
}

function rig(agent: FakeAgent): Rig {
  const fake = fakeSurface();
  const { metric, seen } = recordMetrics();
  const r = { fake, agent, restarts: 0, cancelled: [], tools: [], info: [], picks: [], metrics: seen } as unknown as Rig;
  let clock = 0;
  r.host = {
    keyGiven: false,
    asked: 0,
    choose: (picks) => picks[0],
    folders: () => [
      { scheme: "file", fsPath: "/w" },
      { scheme: "file", fsPath: "/other" },
    ],
    processCwd: () => "/",
    askForKey: async () => {
      r.host.asked++;
      return r.host.keyGiven;
    },
    showInfo: (m) => void r.info.push(m),
    pickSession: async (picks) => {
      r.picks.push(picks);
      return r.host.choose(picks);
    },
    metric,
    now: () => (clock += 10),
  };
  const supervisor = {
    current: agent,
    get capabilities() {
      return agent.initialize?.agentCapabilities;
    },
    ensureAgent: async () => {
      if (!agent.initialize) await agent.start();
      return agent;
    },
    restart: async () => {
      r.restarts++;
    },
  } as unknown as AgentSupervisor;
  r.sessions = new SessionControl(r.host, fake.surface, supervisor, {
    cancelAll: (sessionId) => {
      r.cancelled.push(sessionId);
      return 0;
    },
    toolUpdate: (update) => void r.tools.push(update.toolCallId),
  });
  return r;
}

test("session/new: cwd and other roots; updates that come before its answer are kept for it", async () => {
  let r: Rig | null = null;
  const agent = new FakeAgent(
    {
      "session/new": () => {
        r!.sessions.sessionUpdate(chunk("s1", "early"));
        r!.sessions.sessionUpdate(chunk("other", "not ours"));
        return { sessionId: "s1", configOptions: [] };
      },
    },
    { sessionCapabilities: { additionalDirectories: {} } },
  );
  r = rig(agent);
  assert.equal(await r.sessions.ensureSession(), "s1");
  assert.equal(await r.sessions.ensureSession(), "s1");
  assert.deepEqual(agent.requests, [{ method: "session/new", params: { cwd: "/w", mcpServers: [], additionalDirectories: ["/other"] } }]);
  const shown = r.fake.surface.model.items;
  assert.deepEqual(shown.map((i) => (i.kind === "agent" ? i.text : i.kind)), ["early"]);
});

test("a first prompt while the chat's ready still makes its session: one session/new, the prompt in it", async () => {
  let made = 0;
  const agent = new FakeAgent({
    "session/new": async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return { sessionId: `s${++made}` };
    },
    "session/prompt": (params) => {
      assert.equal(params["sessionId"], "s1");
      return { stopReason: "end_turn" };
    },
  });
  const r = rig(agent);
  const ready = r.sessions.ensureSession();
  await r.sessions.prompt("from the opening input", []);
  assert.equal(await ready, "s1");
  assert.deepEqual(agent.methods(), ["session/new", "session/prompt"]);
});

test("auth_required: asks for a key once, restarts and tries again; without one, says how to log in", async () => {
  let calls = 0;
  const agent = new FakeAgent({
    "session/new": () => {
      if (++calls === 1 || calls === 3) throw Object.assign(new Error("Authentication required"), { code: -32000 });
      return { sessionId: "s2" };
    },
  });
  const r = rig(agent);
  r.host.keyGiven = true;
  assert.equal(await r.sessions.ensureSession(), "s2");
  assert.equal(r.restarts, 1);
  const other = rig(new FakeAgent({ "session/new": () => Promise.reject(Object.assign(new Error("no key"), { code: -32000 })) }));
  await assert.rejects(other.sessions.ensureSession(), /has no credentials: no key\. Run "adk-acp: Set Gemini API Key"/);
  assert.equal(other.host.asked, 1);
  assert.equal(other.restarts, 0);
});

test("a prompt turn: the user's text, turn messages, a stop reason notice, the render metric", async () => {
  const agent = new FakeAgent({
    "session/new": () => ({ sessionId: "s" }),
    "session/prompt": (params) => {
      assert.deepEqual(params["prompt"], [{ type: "text", text: "hi" }]);
      r.sessions.sessionUpdate(chunk("s", "hello"));
      return { stopReason: "max_tokens" };
    },
  });
  const r = rig(agent);
  await r.sessions.prompt("hi", []);
  const turns = r.fake.posted.filter((m) => m.type === "turn");
  assert.equal(turns.length, 2);
  assert.deepEqual(turns[0], { type: "turn", running: true });
  const end = turns[1]!;
  assert.ok(end.type === "turn" && !end.running && end.stopReason === "max_tokens" && typeof end.lastAgentId === "string");
  assert.deepEqual(notices(r.fake.surface), ["The turn stopped: max tokens."]);
  assert.deepEqual(r.cancelled, ["s"], "questions of the turn are void when it ends");
  assert.equal(r.sessions.running, false);
  assert.deepEqual(r.metrics.map((m) => m.name), ["first_chunk_ms", "turn_stream_ms"]);
  r.sessions.rendered("someone else", 5, 100);
  r.sessions.rendered(end.type === "turn" ? end.lastAgentId! : "", 5, 1000, 7, 4);
  assert.equal(r.metrics.at(-1)!.name, "render_ms");
  assert.deepEqual(r.metrics.at(-1)!.extra, { streamMs: r.metrics[1]!.value, length: 5, ipcMs: 3 });
  assert.match(r.fake.status.at(-1)!, /· idle$/);
});

test("a prompt that fails is reported and the turn ends; cancel notifies session/cancel only during a turn", async () => {
  let release!: () => void;
  const agent = new FakeAgent({
    "session/new": () => ({ sessionId: "s" }),
    "session/prompt": () => new Promise((resolve) => (release = () => resolve({ stopReason: "cancelled" }))),
  });
  const r = rig(agent);
  await r.sessions.cancel();
  assert.equal(agent.notifications.length, 0);
  const turn = r.sessions.prompt("one", []);
  await new Promise((resolve) => setImmediate(resolve));
  assert.ok(r.sessions.running);
  await r.sessions.prompt("ignored while a turn runs", []);
  await r.sessions.cancel();
  assert.deepEqual(agent.notifications, [{ method: "session/cancel", params: { sessionId: "s" } }]);
  release();
  await turn;
  assert.deepEqual(notices(r.fake.surface), [], "a cancelled turn needs no notice");
  const failing = rig(new FakeAgent({ "session/new": () => ({ sessionId: "s" }), "session/prompt": () => Promise.reject(new Error("model down")) }));
  await failing.sessions.prompt("x", []);
  assert.deepEqual(failing.fake.errors.map((e) => e.message), ["model down"]);
  assert.equal(failing.sessions.running, false);
});

test("history: picks a session and loads it; the old transcript stays until the replay is complete", async () => {
  let r: Rig | null = null;
  let shownDuringReplay: string[] = [];
  const agent = new FakeAgent(
    {
      "session/new": () => ({ sessionId: "s" }),
      "session/list": () => ({ sessions: [{ sessionId: "old", cwd: "/w", title: "Earlier", updatedAt: null }] }),
      "session/load": (params) => {
        r!.sessions.sessionUpdate(chunk(params["sessionId"] as string, "replayed"));
        shownDuringReplay = r!.fake.surface.model.items.map((i) => (i.kind === "agent" ? i.text : i.kind));
        return {};
      },
    },
    { loadSession: true, sessionCapabilities: { list: {} } },
  );
  r = rig(agent);
  await r.sessions.ensureSession();
  r.sessions.sessionUpdate(chunk("s", "current"));
  await r.sessions.history();
  assert.deepEqual(r.picks[0]!.map((p) => [p.label, p.sessionId, p.detail]), [["Earlier", "old", "/w"]]);
  assert.deepEqual(shownDuringReplay, ["current"]);
  assert.deepEqual(r.fake.surface.model.items.map((i) => (i.kind === "agent" ? i.text : i.kind)), ["replayed"]);
  assert.equal(r.sessions.session, "old");
  const bare = rig(new FakeAgent({}));
  await bare.sessions.history();
  assert.deepEqual(bare.info, ["This agent does not list its sessions."]);
});

test("resume after a restart reloads the shown session and keeps this client's notices", async () => {
  const agent = new FakeAgent(
    { "session/new": () => ({ sessionId: "s" }), "session/load": () => ({}) },
    { loadSession: true },
  );
  const r = rig(agent);
  await r.sessions.ensureSession();
  r.fake.surface.notice("The agent stopped (exit code 1); restarting it.", "warning");
  await r.sessions.resume();
  assert.deepEqual(agent.methods(), ["session/new", "session/load"]);
  assert.deepEqual(notices(r.fake.surface), ["The agent stopped (exit code 1); restarting it.", "The agent is running again."]);
});

test("New Chat closes the old session when the agent can, and config options go to the agent", async () => {
  let n = 0;
  const agent = new FakeAgent(
    {
      "session/new": () => ({ sessionId: `s${++n}` }),
      "session/close": () => ({}),
      "session/set_config_option": (params) => ({
        configOptions: [{ id: params["configId"], name: "Model", type: "select", category: "model", currentValue: params["value"], options: [{ value: "m2", name: "M2" }] }],
      }),
    },
    { sessionCapabilities: { close: {} } },
  );
  const r = rig(agent);
  await r.sessions.ensureSession();
  await r.sessions.newChat("The workspace is trusted now: starting the agent.");
  assert.deepEqual(agent.methods(), ["session/new", "session/close", "session/new"]);
  assert.deepEqual(notices(r.fake.surface), ["The workspace is trusted now: starting the agent."]);
  assert.equal(r.sessions.session, "s2");
  await r.sessions.setConfig("model", "m2");
  assert.deepEqual(agent.requests.at(-1)!.params, { sessionId: "s2", configId: "model", value: "m2" });
  assert.match(r.fake.status.at(-1)!, /adk-acp: M2 · idle/);
});

test("tool calls go to the approvals (their diffs), in the shown session only", async () => {
  const agent = new FakeAgent({ "session/new": () => ({ sessionId: "s" }) });
  const r = rig(agent);
  await r.sessions.ensureSession();
  r.sessions.sessionUpdate({ sessionId: "s", update: { sessionUpdate: "tool_call", toolCallId: "t1", title: "Edit" } });
  r.sessions.sessionUpdate({ sessionId: "x", update: { sessionUpdate: "tool_call", toolCallId: "t2", title: "Edit" } });
  assert.deepEqual(r.tools, ["t1"]);
});

test("a subagent's session: its updates go into its block, live and in a replay; its questions are asked", async () => {
  const agent = new FakeAgent({ "session/new": () => ({ sessionId: "s" }), "session/load": () => ({}) }, { loadSession: true });
  const r = rig(agent);
  await r.sessions.ensureSession();
  assert.ok(!r.sessions.asks("child"));
  r.sessions.sessionUpdate(chunk("child", "before it is announced"));
  r.sessions.sessionUpdate({ sessionId: "s", update: { sessionUpdate: "subagent_update", sessionId: "child", title: "helper", state: { state: "running" } } });
  r.sessions.sessionUpdate(chunk("child", "child words"));
  r.sessions.sessionUpdate({ sessionId: "child", update: { sessionUpdate: "tool_call", toolCallId: "t1", title: "Read" } });
  assert.ok(r.sessions.asks("s") && r.sessions.asks("child") && !r.sessions.asks("other"));
  assert.deepEqual(r.tools, ["t1"]); // its diffs are loaded ahead too
  const rows = (items: typeof r.fake.surface.model.items): string[] =>
    items.map((i) => `${i.parent ?? "-"} ${i.kind === "agent" ? i.text : i.kind}`);
  assert.deepEqual(rows(r.fake.surface.model.items), ["- subagent", "subagent:child child words", "subagent:child tool"]);
  // The same session loaded again: the replay (announcement, then the child's updates) builds the same block.
  agent.answers["session/load"] = () => {
    r.sessions.sessionUpdate({ sessionId: "s", update: { sessionUpdate: "subagent_update", sessionId: "child", title: "helper" } });
    r.sessions.sessionUpdate(chunk("child", "child words"));
    return {};
  };
  await r.sessions.resume();
  assert.deepEqual(rows(r.fake.surface.model.items).slice(0, 2), ["- subagent", "subagent:child child words"]);
});
