// The agent process of a test client, with every line on the wire checked, both ways,
// against the SDK's JSON schema (`schema.json`, or `schema.unstable.json` for a client of
// the unstable entry point). Problems go to `report.invalid`, line counts to `report.lines`.
import { ndJsonStream } from "@agentclientprotocol/sdk";
import Ajv2020 from "ajv/dist/2020.js";
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";

export async function checkedAgent(agentJson, workspace, report, schemaFile = "schema.json") {
  const [command, ...args] = JSON.parse(agentJson);
  const require = createRequire(import.meta.url);
  const schema = JSON.parse(
    await readFile(require.resolve(`@agentclientprotocol/sdk/schema/v1/${schemaFile}`), "utf8"),
  );
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  const fromAgent = ajv.compile({ ...schema, anyOf: [schema.anyOf[0], schema.anyOf[2]] });
  const fromClient = ajv.compile({ ...schema, anyOf: [schema.anyOf[1], schema.anyOf[2]] });
  report.invalid = [];
  report.lines = { agent: 0, client: 0 };

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
  return { child, stream: ndJsonStream(toAgent.writable, agentOut) };
}
