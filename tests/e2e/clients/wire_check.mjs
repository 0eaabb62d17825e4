// The agent process of a test client, with every line on the wire checked, both ways,
// against the SDK's JSON schema (`schema.json`, or `schema.unstable.json` for a client of
// the unstable entry point; of `schema/v1`, or `schema/v2` for a v2 client). Problems go to
// `report.invalid`, line counts to `report.lines`, and, when the report has a `wire` list,
// every message to it (`{dir: "in" (to the agent) | "out", msg}`, for the Python-side check
// of `tests/e2e/official_schema.py`). `checkedStream` does the same for a stream of
// messages (the remote transports' clients).
import { ndJsonStream } from "@agentclientprotocol/sdk";
import Ajv2020 from "ajv/dist/2020.js";
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";

async function checks(report, schemaFile, version) {
  const require = createRequire(import.meta.url);
  const schema = JSON.parse(
    await readFile(require.resolve(`@agentclientprotocol/sdk/schema/${version}/${schemaFile}`), "utf8"),
  );
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  const fromAgent = ajv.compile({ ...schema, anyOf: [schema.anyOf[0], schema.anyOf[2]] });
  const fromClient = ajv.compile({ ...schema, anyOf: [schema.anyOf[1], schema.anyOf[2]] });
  report.invalid = [];
  report.lines = { agent: 0, client: 0 };
  return {
    agent: (message, line) => note(report, "agent", fromAgent, ajv, message, line),
    client: (message, line) => note(report, "client", fromClient, ajv, message, line),
  };
}

function note(report, side, check, ajv, message, line) {
  report.lines[side] += 1;
  report.wire?.push({ dir: side === "client" ? "in" : "out", msg: message });
  if (!check(message)) {
    report.invalid.push({ side, line: line.slice(0, 300), error: ajv.errorsText(check.errors) });
  }
}

export async function checkedAgent(agentJson, workspace, report, schemaFile = "schema.json",
  version = "v1") {
  const [command, ...args] = JSON.parse(agentJson);
  const check = await checks(report, schemaFile, version);

  function validator(side) {
    let pending = "";
    return new TransformStream({
      transform(chunk, controller) {
        pending += new TextDecoder().decode(chunk, { stream: true });
        let index;
        while ((index = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, index);
          pending = pending.slice(index + 1);
          if (!line.trim()) continue;
          let message;
          try { message = JSON.parse(line); } catch (error) {
            report.lines[side] += 1;
            report.invalid.push({ side, line: line.slice(0, 300), error: String(error) });
            continue;
          }
          check[side](message, line);
        }
        controller.enqueue(chunk);
      },
    });
  }

  const child = spawn(command, args, { cwd: workspace, stdio: ["pipe", "pipe", "inherit"] });
  const agentOut = Readable.toWeb(child.stdout).pipeThrough(validator("agent"));
  const toAgent = validator("client");
  toAgent.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
  return { child, stream: ndJsonStream(toAgent.writable, agentOut) };
}

export async function checkedStream(stream, report, schemaFile = "schema.json", version = "v1") {
  const check = await checks(report, schemaFile, version);
  const watch = (side) => new TransformStream({
    transform(message, controller) {
      check[side](message, JSON.stringify(message));
      controller.enqueue(message);
    },
  });
  const toAgent = watch("client");
  toAgent.readable.pipeTo(stream.writable).catch(() => {});
  return { writable: toAgent.writable, readable: stream.readable.pipeThrough(watch("agent")) };
}
