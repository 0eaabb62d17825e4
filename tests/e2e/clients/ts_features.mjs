// The official ACP TypeScript SDK client, through its unstable entry point, driving
// today's ACP features of a real agent (issue 22): auth methods (terminal offered,
// refused by authenticate; an agent method accepted), notices and compaction updates
// for a client that opts in, tool-call names, a turn's usage, a title set by the
// client, and `$/cancel_request` of a long session/load (the SDK's cancellation signal).
// Every line on the wire is validated, both ways, against schema.unstable.json.
// Usage: node ts_features.mjs '<agent argv as JSON>' <workspace> <report.json> <armed> <marker>
import * as acp from "@agentclientprotocol/sdk/unstable";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { runReported } from "./reported.mjs";
import { checkedAgent } from "./wire_check.mjs";

const [, , agentJson, workspace, reportPath, armedPath, markerPath] = process.argv;
const report = { invalid: [], lines: { agent: 0, client: 0 }, updates: [], stops: [],
  usages: [] };
const { child, stream } = await checkedAgent(agentJson, workspace, report, "schema.unstable.json");

const app = acp.client({ name: "adk-acp-ts-features" })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => (
    { content: await readFile(params.path, "utf8") }
  ))
  .onNotification(acp.methods.client.session.update, async ({ params }) => {
    report.updates.push(params.update);
  });

async function turn(session, text) {
  const answered = session.prompt(text);
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") break;
  }
  const response = await answered;
  report.stops.push(response.stopReason);
  report.usages.push(response.usage ?? null);
}

async function errorOf(promise) {
  try { await promise; return null; } catch (error) {
    return { code: error?.code ?? null, message: String(error?.message ?? error) };
  }
}

async function until(check) {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
}

await runReported(child, report, reportPath, () => (
  app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: {
        fs: { readTextFile: true, writeTextFile: false },
        auth: { terminal: true },
        session: { notices: {}, compaction: {} },
      },
    });
    report.authMethods = init.authMethods;
    report.agentCapabilities = init.agentCapabilities;
    const terminal = init.authMethods.find((m) => m.type === "terminal");
    report.terminalAuthenticate = await errorOf(
      ctx.request(acp.methods.agent.authenticate, { methodId: terminal.id }));
    report.agentAuthenticate = await ctx.request(
      acp.methods.agent.authenticate, { methodId: "gemini-api-key" });

    const session = await ctx.buildSession(workspace).start();
    report.sessionId = session.sessionId;
    report.title = await ctx.request(acp.methods.agent.session.setTitle,
      { sessionId: session.sessionId, title: "From the TypeScript SDK" });
    await turn(session, "read a.txt");
    await turn(session, "/compress");
    session.dispose();
    await ctx.request(acp.methods.agent.session.close, { sessionId: session.sessionId });

    await writeFile(armedPath, "");
    const load = { sessionId: report.sessionId, cwd: workspace, mcpServers: [] };
    const abort = new AbortController();
    const loading = ctx.request(acp.methods.agent.session.load, load,
      { cancellationSignal: abort.signal });
    await until(() => existsSync(markerPath));
    abort.abort();
    report.cancelledLoad = await errorOf(loading);
    const seen = report.updates.length;
    await ctx.request(acp.methods.agent.session.load, load);
    report.replayed = report.updates.slice(seen);
    const listed = await ctx.request(acp.methods.agent.session.list, { cwd: workspace });
    report.listedTitles = listed.sessions.map((s) => s.title);
  })
));
