// The agent as a child process and the ACP connection to it (official SDK). Every line
// on the wire goes to the log (redacted); stderr's last lines are kept to explain a crash.

import * as acp from "@agentclientprotocol/sdk/unstable";
import type { ChildProcess, SpawnOptions } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { redact } from "./redact";

export interface ClientHandlers {
  requestPermission(params: acp.RequestPermissionRequest, receivedAt: number): Promise<acp.RequestPermissionResponse>;
  sessionUpdate(params: acp.SessionNotification): void;
  readTextFile(params: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse>;
  writeTextFile(params: acp.WriteTextFileRequest): Promise<acp.WriteTextFileResponse>;
  createTerminal(params: acp.CreateTerminalRequest): Promise<acp.CreateTerminalResponse>;
  terminalOutput(params: acp.TerminalOutputRequest): Promise<acp.TerminalOutputResponse>;
  waitForTerminalExit(params: acp.WaitForTerminalExitRequest): Promise<acp.WaitForTerminalExitResponse>;
  killTerminal(params: acp.KillTerminalRequest): Promise<acp.KillTerminalResponse>;
  releaseTerminal(params: acp.ReleaseTerminalRequest): Promise<acp.ReleaseTerminalResponse>;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderrTail: string[];
  intended: boolean;
  spawnError?: string;
}

export interface AgentProcessOptions {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string | undefined;
  spawn: (command: string, args: string[], options: SpawnOptions) => ChildProcess;
  log: (line: string) => void;
  secrets: () => string[];
  handlers: ClientHandlers;
  onExit: (info: ExitInfo) => void;
  now?: () => number;
}

/** What the chat can take: files and terminals through the editor; notices and
 * compactions (ACP 1.21), subagent sessions and plan operations (unstable), each shown
 * in the chat (chatModel.ts). */
export const CLIENT_CAPABILITIES: acp.ClientCapabilities = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
  session: { notices: {}, compaction: {} },
  subagents: {},
  plan: {},
  // The user may change an edit before allowing it (issue 36; README "Edit review").
  _meta: { adkAcp: { editReview: true } },
};

const TAIL_LINES = 30;

function lineTap(onLine: (line: string) => void): TransformStream<Uint8Array, Uint8Array> {
  let pending = "";
  const decoder = new TextDecoder();
  return new TransformStream({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      let index: number;
      while ((index = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, index);
        pending = pending.slice(index + 1);
        if (line.trim()) onLine(line);
      }
      controller.enqueue(chunk);
    },
  });
}

export class AgentProcess {
  private child: ChildProcess | null = null;
  private connection: acp.ClientConnection | null = null;
  private readonly tail: string[] = [];
  private stopping = false;
  private exitReported = false;
  initialize: acp.InitializeResponse | null = null;

  constructor(private readonly options: AgentProcessOptions) {}

  get agent(): acp.ClientContext {
    if (!this.connection) throw new Error("the agent is not running");
    return this.connection.agent;
  }

  get alive(): boolean {
    return this.child !== null && this.child.exitCode === null && !this.exitReported;
  }

  stderrTail(): string[] {
    return [...this.tail];
  }

  private logLine(direction: "→" | "←", line: string): void {
    const clipped = line.length > 4000 ? `${line.slice(0, 4000)}… (${line.length} chars)` : line;
    this.options.log(`${direction} ${redact(clipped, this.options.secrets())}`);
  }

  private reportExit(info: Omit<ExitInfo, "stderrTail" | "intended">): void {
    if (this.exitReported) return;
    this.exitReported = true;
    this.connection?.close();
    this.options.onExit({ ...info, stderrTail: this.stderrTail(), intended: this.stopping });
  }

  async start(): Promise<acp.InitializeResponse> {
    const { options } = this;
    const now = options.now ?? Date.now;
    const child = options.spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child = child;
    const spawned = new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (error) => reject(error));
    });
    child.on("error", (error) => this.reportExit({ code: null, signal: null, spawnError: error.message }));
    child.on("exit", (code, signal) => {
      // Let stderr drain so the tail holds the last words.
      setTimeout(() => this.reportExit({ code, signal }), 50);
    });
    let partial = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (data: string) => {
      partial += data;
      const lines = partial.split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        const clean = redact(line, options.secrets());
        this.tail.push(clean);
        options.log(`stderr: ${clean}`);
      }
      if (this.tail.length > TAIL_LINES) this.tail.splice(0, this.tail.length - TAIL_LINES);
    });
    await spawned;
    const fromAgent = (Readable.toWeb(child.stdout!) as unknown as ReadableStream<Uint8Array>).pipeThrough(
      lineTap((line) => this.logLine("←", line)),
    );
    const toAgent = lineTap((line) => this.logLine("→", line));
    toAgent.readable.pipeTo(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>).catch(() => undefined);
    const stream = acp.ndJsonStream(toAgent.writable, fromAgent);
    const h = options.handlers;
    const app = acp
      .client({ name: "adk-acp-vscode" })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => h.requestPermission(params, now()))
      .onNotification(acp.methods.client.session.update, ({ params }) => h.sessionUpdate(params))
      .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => h.readTextFile(params))
      .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => h.writeTextFile(params))
      .onRequest(acp.methods.client.terminal.create, ({ params }) => h.createTerminal(params))
      .onRequest(acp.methods.client.terminal.output, ({ params }) => h.terminalOutput(params))
      .onRequest(acp.methods.client.terminal.waitForExit, ({ params }) => h.waitForTerminalExit(params))
      .onRequest(acp.methods.client.terminal.kill, ({ params }) => h.killTerminal(params))
      .onRequest(acp.methods.client.terminal.release, ({ params }) => h.releaseTerminal(params));
    this.connection = app.connect(stream);
    this.initialize = await this.connection.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: CLIENT_CAPABILITIES,
      clientInfo: { name: "adk-acp-vscode", version: "0.1.0" },
    });
    return this.initialize;
  }

  stop(): void {
    this.stopping = true;
    this.connection?.close();
    const child = this.child;
    if (child && child.exitCode === null) {
      child.stdin?.end();
      child.kill("SIGTERM");
      setTimeout(() => {
        if (child.exitCode === null) child.kill("SIGKILL");
      }, 2000).unref?.();
    }
  }
}
