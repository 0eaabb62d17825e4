// The official ACP TypeScript SDK client, through its unstable entry point (which types
// these requests and updates), driving three newer ACP features of a real agent (issue 22):
// subagent sessions (`clientCapabilities.subagents`: `subagent_update` on the parent, the
// child's updates and permission request under its own id, answered here), plan operations
// (`clientCapabilities.plan`: `plan_update` with ids, `plan_removed`), and the client's
// system prompt (`systemPrompt` append and override on session/new, override on
// session/load; the test reads what the model received). Every line on the wire is
// validated, both ways, against schema.unstable.json.
// Usage: node ts_subplan.mjs '<agent argv as JSON>' <workspace> <report.json>
import * as acp from "@agentclientprotocol/sdk/unstable";
import { readFile, writeFile } from "node:fs/promises";
import { runReported } from "./reported.mjs";
import { checkedAgent } from "./wire_check.mjs";

const [, , agentJson, workspace, reportPath] = process.argv;
const report = { updates: [], permissions: [], stops: [] };
const { child, stream } = await checkedAgent(agentJson, workspace, report, "schema.unstable.json");

const app = acp.client({ name: "adk-acp-ts-subplan" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    report.permissions.push(params);
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => (
    { content: await readFile(params.path, "utf8") }
  ))
  .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
    await writeFile(params.path, params.content);
    return {};
  })
  .onNotification(acp.methods.client.session.update, async ({ params }) => {
    report.updates.push({ sessionId: params.sessionId, update: params.update });
  });

function systemPrompt(mode, text) {
  return { mode, content: [{ type: "text", text }] };
}

await runReported(child, report, reportPath, () => (
  app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: {
        fs: { readTextFile: true, writeTextFile: true },
        subagents: {},
        plan: {},
      },
    });
    report.agentCapabilities = init.agentCapabilities;

    async function prompt(sessionId, text) {
      const answer = await ctx.request(acp.methods.agent.session.prompt,
        { sessionId, prompt: [{ type: "text", text }] });
      report.stops.push(answer.stopReason);
    }

    const base = { cwd: workspace, mcpServers: [] };
    const french = await ctx.request(acp.methods.agent.session.new,
      { ...base, systemPrompt: systemPrompt("append", "Answer in French.") });
    report.sessionId = french.sessionId;
    await prompt(french.sessionId, "get a.py reviewed");
    await prompt(french.sessionId, "plan it");
    report.live = report.updates.length;

    const poet = await ctx.request(acp.methods.agent.session.new,
      { ...base, systemPrompt: systemPrompt("override", "Be a poet.") });
    report.poetSessionId = poet.sessionId;
    await prompt(poet.sessionId, "hi");

    await ctx.request(acp.methods.agent.session.close, { sessionId: french.sessionId });
    const seen = report.updates.length;
    await ctx.request(acp.methods.agent.session.load, {
      ...base, sessionId: french.sessionId, systemPrompt: systemPrompt("override", "Be terse."),
    });
    report.replayed = report.updates.slice(seen);
    await prompt(french.sessionId, "again");
  })
));
