// The official ACP TypeScript SDK (2.4) client over its experimental remote transports,
// driving `adk-acp serve`: initialize, a session, two prompts, one permission question.
// Usage: node ts_remote.mjs <ws|http> <url> <token or -> <workspace> <report.json>
import * as acp from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { writeFile } from "node:fs/promises";
import { allowOnce, turn } from "./turn.mjs";

const [, , kind, url, token, workspace, reportPath] = process.argv;
const headers = token === "-" ? {} : { Authorization: `Bearer ${token}` };
const stream = kind === "ws"
  ? createWebSocketStream(url, { WebSocket: globalThis.WebSocket })
  : createHttpStream(url, { headers });
const report = { stops: [], texts: [], permissions: 0, loadSession: null };

const app = acp.client({ name: "adk-acp-ts-remote-test" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    report.permissions += 1;
    return allowOnce(params);
  });

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: 1, clientCapabilities: {},
    });
    report.loadSession = init.agentCapabilities?.loadSession ?? false;
    const session = await ctx.buildSession(workspace).start();
    await turn(session, "say hello", report);
    await turn(session, "write a file", report);
    session.dispose();
  });
} catch (error) {
  report.error = String(error?.stack ?? error);
}
await writeFile(reportPath, JSON.stringify(report, null, 1));
process.exit(0);
