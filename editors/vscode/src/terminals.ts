// terminal/* on VS Code terminals: each command runs as a child process (its own
// process group) whose output is shown in a Pseudoterminal and captured for
// terminal/output (under outputByteLimit). The VS Code side is injected.

import type * as acp from "@agentclientprotocol/sdk/unstable";
import type { ChildProcess, SpawnOptions } from "node:child_process";
import { OutputBuffer } from "./outputBuffer";

type Listener<T> = (value: T) => void;

/** A minimal event emitter with VS Code's Event shape (listener → disposable). */
export class Emitter<T> {
  private listeners = new Set<Listener<T>>();
  readonly event = (listener: Listener<T>): { dispose(): void } => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

/** The shape of vscode.Pseudoterminal that we implement. */
export interface PseudoterminalLike {
  onDidWrite: (listener: Listener<string>) => { dispose(): void };
  onDidClose: (listener: Listener<number | void>) => { dispose(): void };
  open(): void;
  close(): void;
  handleInput?(data: string): void;
}

export interface TerminalHost {
  spawn(command: string, args: string[], options: SpawnOptions): ChildProcess;
  /** Creates and shows a VS Code terminal backed by the pseudoterminal. */
  createTerminal(name: string, pty: PseudoterminalLike): { dispose(): void; show?(preserveFocus?: boolean): void };
  killGroup(pid: number, signal: NodeJS.Signals): void;
}

interface Running {
  id: string;
  sessionId: string;
  child: ChildProcess;
  output: OutputBuffer;
  exit: acp.TerminalExitStatus | null;
  exited: Promise<acp.TerminalExitStatus>;
  write: Emitter<string>;
  terminal: { dispose(): void } | null;
  released: boolean;
}

export class TerminalManager {
  private readonly terminals = new Map<string, Running>();
  private counter = 0;

  constructor(
    private readonly host: TerminalHost,
    private readonly baseEnv: NodeJS.ProcessEnv,
  ) {}

  async create(params: acp.CreateTerminalRequest): Promise<acp.CreateTerminalResponse> {
    const id = `term-${++this.counter}`;
    const env: NodeJS.ProcessEnv = { ...this.baseEnv };
    for (const variable of params.env ?? []) env[variable.name] = variable.value;
    const args = params.args ?? [];
    const write = new Emitter<string>();
    const closed = new Emitter<number | void>();
    const output = new OutputBuffer(params.outputByteLimit);
    const child = this.host.spawn(params.command, args, {
      cwd: params.cwd ?? undefined,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let resolveExit!: (status: acp.TerminalExitStatus) => void;
    const exited = new Promise<acp.TerminalExitStatus>((resolve) => {
      resolveExit = resolve;
    });
    const running: Running = { id, sessionId: params.sessionId, child, output, exit: null, exited, write, terminal: null, released: false };
    // VS Code drops what a pseudoterminal writes before open(): hold it until then.
    let opened = false;
    let early = "";
    const show = (data: Buffer | string): void => {
      const text = String(data).replace(/\r?\n/g, "\r\n");
      if (opened) write.fire(text);
      else early += text;
    };
    const onData = (data: Buffer): void => {
      output.push(data);
      show(data);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    let finished = false;
    const finish = (status: acp.TerminalExitStatus): void => {
      if (finished) return;
      finished = true;
      running.exit = status;
      const how = status.signal ? `killed by ${status.signal}` : `exit code ${status.exitCode}`;
      show(`\n[${how}]\n`);
      resolveExit(status);
    };
    child.on("error", (error) => {
      const text = `${params.command}: ${error.message}\n`;
      output.push(Buffer.from(text));
      show(text);
      finish({ exitCode: 127, signal: null });
    });
    child.on("close", (code, signal) => finish({ exitCode: code, signal: signal ?? null }));
    const commandLine = [params.command, ...args].map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ");
    const pty: PseudoterminalLike = {
      onDidWrite: write.event,
      onDidClose: closed.event,
      open: () => {
        opened = true;
        write.fire(`\x1b[2m$ ${commandLine}\x1b[0m\r\n${early}`);
        early = "";
      },
      close: () => {
        if (running.exit === null) this.killProcess(running);
      },
    };
    running.terminal = this.host.createTerminal(`adk-acp: ${commandLine.slice(0, 40)}`, pty);
    this.terminals.set(id, running);
    return { terminalId: id };
  }

  private get(terminalId: string): Running {
    const running = this.terminals.get(terminalId);
    if (!running || running.released) throw new Error(`no terminal ${terminalId}`);
    return running;
  }

  async output(params: acp.TerminalOutputRequest): Promise<acp.TerminalOutputResponse> {
    const running = this.get(params.terminalId);
    return {
      output: running.output.text(),
      truncated: running.output.truncated,
      ...(running.exit ? { exitStatus: running.exit } : {}),
    };
  }

  async waitForExit(params: acp.WaitForTerminalExitRequest): Promise<acp.WaitForTerminalExitResponse> {
    const running = this.get(params.terminalId);
    return await running.exited;
  }

  private killProcess(running: Running): void {
    if (running.exit !== null || running.child.pid === undefined) return;
    try {
      this.host.killGroup(running.child.pid, "SIGKILL");
    } catch {
      running.child.kill("SIGKILL");
    }
  }

  async kill(params: acp.KillTerminalRequest): Promise<acp.KillTerminalResponse> {
    this.killProcess(this.get(params.terminalId));
    return {};
  }

  /** Kills the command if it still runs and forgets it; the VS Code terminal stays for reading. */
  async release(params: acp.ReleaseTerminalRequest): Promise<acp.ReleaseTerminalResponse> {
    const running = this.terminals.get(params.terminalId);
    if (!running) return {};
    this.killProcess(running);
    running.released = true;
    this.terminals.delete(params.terminalId);
    return {};
  }

  /** How many commands still run (for tests and for shutdown). */
  get running(): number {
    return [...this.terminals.values()].filter((t) => t.exit === null).length;
  }

  dispose(): void {
    for (const running of this.terminals.values()) {
      this.killProcess(running);
      running.terminal?.dispose();
    }
    this.terminals.clear();
  }
}
