// The official ACP TypeScript SDK client, through its unstable entry point, driving
// today's ACP features of a real agent (issue 22): auth methods (terminal offered,
// refused by authenticate; an agent method accepted), notices and compaction updates
// for a client that opts in, tool-call names, a turn's usage, a title set by the
// client, and `$/cancel_request` of a long session/load (the SDK's cancellation signal).
// Every line on the wire is validated, both ways, against schema.unstable.json.
// Usage: node ts_features.mjs '<agent argv as JSON>' <workspace> <report.json> <armed> <marker>
import * as acp from "@agentclientprotocol/sdk/unstable";
import Ajv2020 from "ajv/dist/2020.js";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";

const [, , agentJson, workspace, reportPath, armedPath, markerPath] = process.argv;
const [command, ...args] = JSON.parse(agentJson);
const require = createRequire(import.meta.url);
const schema = JSON.parse(
  await readFile(
    require.resolve("@agentclientprotocol/sdk/schema/v1/schema.unstable.json"), "utf8"),
);
const ajv = new Ajv2020({ strict: false, allErrors: false });
const fromAgent = ajv.compile({ ...schema, anyOf: [schema.anyOf[0], schema.anyOf[2]] });
const fromClient = ajv.compile({ ...schema, anyOf: [schema.anyOf[1], schema.anyOf[2]] });

const report = { invalid: [], lines: { agent: 0, client: 0 }, updates: [], stops: [],
  usages: [] };

function validator(check, side) {
  let pending = "";
  return new TransformStream({
    transform(chunk, controller) {
      pending += new TextDecoder().decode(chunk, { stream: true });
      let index;
      while ((index = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, index);
        pending = pending.slice(index + 1);
        if (!line.trim()) continue;
        report.lines[side] += 1;
        let message;
        try { message = JSON.parse(line); } catch (error) {
          report.invalid.push({ side, line: line.slice(0, 300), error: String(error) });
          continue;
        }
        if (!check(message)) {
          report.invalid.push({ side, line: line.slice(0, 300), error: ajv.errorsText(check.errors) });
        }
      }
      controller.enqueue(chunk);
    },
  });
}

const child = spawn(command, args, { cwd: workspace, stdio: ["pipe", "pipe", "inherit"] });
const agentOut = Readable.toWeb(child.stdout).pipeThrough(validator(fromAgent, "agent"));
const toAgent = validator(fromClient, "client");
toAgent.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
const stream = acp.ndJsonStream(toAgent.writable, agentOut);

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

try {
  await app.connectWith(stream, async (ctx) => {
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
  });
} catch (error) {
  report.error = String(error?.stack ?? error);
}
child.stdin.end();
await new Promise((resolve) => { child.on("exit", resolve); setTimeout(resolve, 5000); });
await writeFile(reportPath, JSON.stringify(report, null, 1));
process.exit(0);
