// The official ACP TypeScript SDK client (@agentclientprotocol/sdk 2.x) driving a
// real agent: initialize, a session, scripted prompts, a cancel during a command.
// Every line on the wire is validated, both ways, against the SDK's JSON schema.
// Usage: node ts_client.mjs '<agent argv as JSON>' <workspace> <report.json>
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { allowOnce, turn } from "./turn.mjs";
import { checkedAgent } from "./wire_check.mjs";

const [, , agentJson, workspace, reportPath] = process.argv;
const report = { invalid: [], lines: { agent: 0, client: 0 }, stops: [], texts: [], permissions: [],
  reads: [], writes: [], terminals: [], loadSession: null };
const { child, stream } = await checkedAgent(agentJson, workspace, report);

const terminals = new Map();
let terminalStarted = null;

const app = acp.client({ name: "adk-acp-ts-test" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    report.permissions.push(params);
    return allowOnce(params);
  })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
    report.reads.push(params.path);
    return { content: await readFile(params.path, "utf8") }; // ENOENT → the SDK answers -32603
  })
  .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
    report.writes.push(params.path);
    await writeFile(params.path, params.content);
    return {};
  })
  .onRequest(acp.methods.client.terminal.create, async ({ params }) => {
    const id = `t${terminals.size + 1}`;
    const proc = spawn(params.command, params.args ?? [], { cwd: params.cwd, detached: true });
    const term = { proc, output: "", exit: null };
    proc.stdout.on("data", (d) => { term.output += d; });
    proc.stderr.on("data", (d) => { term.output += d; });
    term.done = new Promise((resolve) => proc.on("exit", (code, signal) => {
      term.exit = { exitCode: code, signal }; resolve();
    }));
    terminals.set(id, term);
    report.terminals.push(params.command + " " + (params.args ?? []).join(" "));
    terminalStarted?.();
    return { terminalId: id };
  })
  .onRequest(acp.methods.client.terminal.output, async ({ params }) => {
    const term = terminals.get(params.terminalId);
    return { output: term.output, truncated: false, exitStatus: term.exit ?? undefined };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
    const term = terminals.get(params.terminalId);
    await term.done;
    return term.exit;
  })
  .onRequest(acp.methods.client.terminal.kill, async ({ params }) => {
    const term = terminals.get(params.terminalId);
    if (term.exit === null) { try { process.kill(-term.proc.pid, "SIGKILL"); } catch {} }
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, async ({ params }) => {
    const term = terminals.get(params.terminalId);
    if (term && term.exit === null) { try { process.kill(-term.proc.pid, "SIGKILL"); } catch {} }
    return {};
  });

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    });
    report.loadSession = init.agentCapabilities?.loadSession ?? false;
    const session = await ctx.buildSession(workspace).start();
    for (const text of ["read a.txt", "create new.txt", "edit a.txt", "run a command"]) {
      await turn(session, text, report);
    }
    const started = new Promise((resolve) => { terminalStarted = resolve; });
    const long = turn(session, "run a long command", report);
    await started;
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
    await long;
    session.dispose();
  });
} catch (error) {
  report.error = String(error?.stack ?? error);
}
child.stdin.end();
await new Promise((resolve) => { child.on("exit", resolve); setTimeout(resolve, 5000); });
report.terminalsLeft = [...terminals.values()].filter((t) => t.exit === null).length;
await writeFile(reportPath, JSON.stringify(report, null, 1));
process.exit(0);
