// The official ACP TypeScript SDK's experimental v2 client (@agentclientprotocol/sdk 2.4,
// `experimental/v2`) driving a real agent over stdio or `adk-acp serve` (ws, http):
// initialize asking for 2, a session, turns (text, a write asked for, a plan, a command
// cancelled while it runs), the list, a resume replaying from the start and one from a hub
// cursor, the close, auth/login and auth/logout. Every message, both ways, is checked
// against schema/v2/schema.json (and kept in `report.wire` for the per-method check on the
// Python side). On stdio (and on serve with ADK_ACP_V2_MORE set), before the list: a
// compression, a model fallback asked as a form, a subagent, Plan mode's plan, a fork with
// a system prompt (`moreOnStdio`).
// Usage: node ts_v2.mjs <agent argv as JSON | url> <workspace> <report.json>
//        [<stdio|ws|http> <token or -> <session id file> <attached file>]
// With the last two, the session's id is written to the first, and the turns wait until
// the second exists (another client attaches to the session meanwhile).
import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { runReported } from "./reported.mjs";
import { allowOnce, turn } from "./turn.mjs";
import { checkedAgent, checkedStream } from "./wire_check.mjs";

const [, , target, workspace, reportPath, kind = "stdio", token = "-", sessionFile, attachedFile] =
  process.argv;
const report = {
  stops: [], texts: [], messageIds: [], permissions: [], elicitations: [], updates: [], wire: [],
  children: {},
};
let child = null;
let stream;
if (kind === "stdio") {
  ({ child, stream } = await checkedAgent(target, workspace, report, "schema.json", "v2"));
} else {
  const headers = token === "-" ? {} : { Authorization: `Bearer ${token}` };
  const remote = kind === "ws"
    ? createWebSocketStream(target, { WebSocket: globalThis.WebSocket })
    : createHttpStream(target, { headers });
  stream = await checkedStream(remote, report, "schema.json", "v2");
}

const watchers = [];
function seen(check) {
  return new Promise((resolve) => watchers.push({ check, resolve }));
}

const app = acp.client({ name: "adk-acp-ts-v2" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    report.permissions.push(params);
    return allowOnce(params);
  })
  .onRequest(acp.methods.client.elicitation.create, async ({ params }) => {
    report.elicitations.push(params);
    return { action: "accept", content: { choice: "retry_once" } };
  })
  .onNotification(acp.methods.client.session.update, async ({ params }) => {
    if (report.sessionId && params.sessionId !== report.sessionId) {
      (report.children[params.sessionId] ??= []).push(params.update);  // a subagent's, a fork's
      return;
    }
    report.updates.push(params.update);
    for (const watcher of watchers.splice(0)) {
      if (watcher.check(params.update)) watcher.resolve(); else watchers.push(watcher);
    }
  });

async function until(check) {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
}

async function outcome(promise) {
  try { await promise; return { ok: true }; } catch (error) {
    return { code: error?.code ?? null, message: String(error?.message ?? error) };
  }
}

await runReported(child, report, reportPath, () => (
  app.connectWith(stream, async (ctx) => {
    report.init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: 2,
      info: { name: "adk-acp-ts-v2", version: "1.0.0" },
      capabilities: { auth: { terminal: {} }, elicitation: { form: {} } },
    });
    const session = await ctx.buildSession(workspace).start();
    const sessionId = session.sessionId;
    report.sessionId = sessionId;
    if (sessionFile) {
      await writeFile(sessionFile, sessionId);
      await until(() => existsSync(attachedFile));
    }
    for (const text of ["say hello", "write a file", "make a plan"]) {
      report.messageIds.push((await turn(session, text, report)).messageId);
    }
    const running = seen((u) => u.sessionUpdate === "tool_call_update" && u.status === "in_progress");
    const long = turn(session, "run a long command", report);
    await running;
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    await long;
    if (kind === "stdio" || process.env.ADK_ACP_V2_MORE) await moreOnStdio(ctx, session, sessionId);
    session.dispose();
    const listed = await ctx.request(acp.methods.agent.session.list, { cwd: workspace });
    report.listed = listed.sessions.map((s) => s.sessionId);
    // the state snapshot ends each replay (handled after the answer resolves, at times)
    const snapshot = () => seen((u) => u.sessionUpdate === "state_update" && u.state === "idle");
    let mark = report.updates.length;
    let replayed = snapshot();
    await ctx.request(acp.methods.agent.session.resume,
      { sessionId, cwd: workspace, replayFrom: { type: "start" } });
    await replayed;
    report.replayed = report.updates.slice(mark);
    mark = report.updates.length;
    replayed = snapshot();
    report.cursor = await outcome(ctx.request(acp.methods.agent.session.resume,
      { sessionId, cwd: workspace, replayFrom: { type: "_adkAcp/cursor", cursor: 0 } }));
    if (report.cursor.ok) await replayed;
    report.cursorReplayed = report.updates.slice(mark);
    report.close = await outcome(ctx.request(acp.methods.agent.session.close, { sessionId }));
    await auth(ctx);
  })
));

// The v2 parts a stdio run goes on with: a compression (its `compaction_update`), a turn
// whose model call fails for the day's quota (the fallback asked as a form, accepted), a
// subagent's run (a child session), a plan file written in Plan mode (a plan of its own
// id), a fork given a system prompt (and one with a mode nobody has: refused).
async function moreOnStdio(ctx, session, sessionId) {
  await turn(session, "/compress", report);
  await turn(session, "fall back", report);
  await turn(session, "get a.py reviewed", report);
  await session.setConfigOption({ configId: "mode", type: "id", value: "plan" });
  await turn(session, "plan it", report);
  const systemPrompt = { mode: "append", content: [{ type: "text", text: "Answer in haiku." }] };
  report.fork = await ctx.request("session/fork",
    { sessionId, cwd: workspace, mcpServers: [], systemPrompt });
  report.badPrompt = await outcome(ctx.request("session/fork",
    { sessionId, cwd: workspace, systemPrompt: { ...systemPrompt, mode: "whisper" } }));
}

// The terminal login refused by auth/login, an agent method accepted with a key, then
// auth/logout.
async function auth(ctx) {
  const terminal = report.init.authMethods.find((m) => m.type === "terminal");
  report.terminalLogin = await outcome(
    ctx.request(acp.methods.agent.auth.login, { methodId: terminal.methodId }));
  report.login = await ctx.request(acp.methods.agent.auth.login,
    { methodId: "gemini-api-key", _meta: { "api-key": "from-the-v2-client" } });
  report.logout = await ctx.request(acp.methods.agent.auth.logout, {});
}
