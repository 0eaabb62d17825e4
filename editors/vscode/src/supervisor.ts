// The agent supervisor: starts the agent process (never in an untrusted workspace, never
// with settings that need a fix; a secret in `adkAcp.env` is used, with a warning that
// offers to move it to secret storage), hands it the API key and the secret environment
// variables from secret storage, and restarts
// it when it dies (at most three times a minute; a spawn error is not retried). The VS
// Code side (trust, settings, secrets, notifications) and the process are injected.

import type * as acp from "@agentclientprotocol/sdk/unstable";
import { resolveAgentCommand, UntrustedWorkspace } from "./agentCommand";
import type { AgentProcessOptions, ClientHandlers, ExitInfo } from "./agentProcess";
import type { ChatSurface } from "./chatSurface";
import type { Metric } from "./metrics";
import type { ReadSettings } from "./settings";

/** The running agent as the supervisor uses it (AgentProcess). */
export interface RunningAgent {
  readonly alive: boolean;
  readonly initialize: acp.InitializeResponse | null;
  readonly agent: acp.ClientContext;
  start(): Promise<unknown>;
  stop(): void;
  stderrTail(): string[];
}

export interface SupervisorHost {
  isTrusted(): boolean;
  settings(): ReadSettings;
  /** Environment variables kept in secret storage (moved there from `adkAcp.env`). */
  secretEnv(): Promise<Record<string, string>>;
  /** The agent started with secrets from `adkAcp.env`: warn, offer to move them (not awaited). */
  secretsInSettings(found: Record<string, string>): void;
  /** The workspace folders on disk (for the workspace's .venv/bin/adk-acp). */
  workspaceFolders(): string[];
  /** The agent's working directory: the first workspace folder on disk. */
  cwd(): string | undefined;
  /** The Gemini API key in secret storage, if any. */
  apiKey(): Promise<string | undefined>;
  env: NodeJS.ProcessEnv;
  isExecutable(file: string): boolean;
  launch(options: Omit<AgentProcessOptions, "spawn">): RunningAgent;
  showError(message: string, actions: string[]): PromiseLike<string | undefined>;
  showWarning(message: string): void;
  metric: Metric;
  now(): number;
  /** Waits a little (for the last stderr lines of an agent that failed to start). */
  pause(ms: number): Promise<void>;
}

export interface SupervisorEvents {
  handlers: ClientHandlers;
  /** The agent is gone (any reason): pending questions are void. */
  lost(): void;
  /** It died unexpectedly: the turn in progress ends. */
  crashed(): void;
  /** It runs again after a restart: reopen the session. */
  resume(): Promise<void>;
}

const RESTARTS_PER_MINUTE = 3;

export class AgentSupervisor {
  private agent: RunningAgent | null = null;
  private starting: Promise<RunningAgent> | null = null;
  private key: string | undefined;
  private restarts: number[] = [];
  private disposed = false;

  constructor(
    private readonly host: SupervisorHost,
    private readonly surface: ChatSurface,
    private readonly events: SupervisorEvents,
  ) {}

  /** The agent, when one is running or starting. */
  get current(): RunningAgent | null {
    return this.agent;
  }

  get capabilities(): acp.AgentCapabilities | undefined {
    return this.agent?.initialize?.agentCapabilities;
  }

  async ensureAgent(): Promise<RunningAgent> {
    if (this.agent?.alive) return this.agent;
    if (!this.starting) {
      this.starting = this.start().finally(() => {
        this.starting = null;
      });
    }
    return this.starting;
  }

  private async start(): Promise<RunningAgent> {
    const host = this.host;
    if (!host.isTrusted()) throw new UntrustedWorkspace();
    const { settings, problems, secrets = [] } = host.settings();
    if (problems.length) throw new Error(`adk-acp's settings need a fix: ${problems.join(" ")}`);
    const choice = resolveAgentCommand({
      setting: settings.command,
      args: settings.args,
      pathEnv: host.env["PATH"],
      workspaceFolders: host.workspaceFolders(),
      isExecutable: (file) => host.isExecutable(file),
    });
    this.key = await host.apiKey();
    const stored = await host.secretEnv();
    const env: NodeJS.ProcessEnv = { ...host.env, ...stored, ...settings.env };
    const hidden = [...Object.values(stored), ...secrets.map((n) => settings.env[n]!)]; // redacted in the log
    if (secrets.length) host.secretsInSettings(Object.fromEntries(secrets.map((n) => [n, settings.env[n]!])));
    if (this.key && !env["GEMINI_API_KEY"]) env["GEMINI_API_KEY"] = this.key;
    this.surface.setStatus("starting");
    this.surface.log.info(`starting ${choice.command} ${choice.args.join(" ")} (${choice.source})`);
    const started = host.now();
    const agent = host.launch({
      command: choice.command,
      args: choice.args,
      env,
      cwd: host.cwd(),
      log: (line) => this.surface.log.info(line),
      secrets: () => [...(this.key ? [this.key] : []), ...hidden],
      handlers: this.events.handlers,
      onExit: (info) => this.exited(agent, info),
    });
    this.agent = agent;
    try {
      await agent.start();
    } catch (error) {
      agent.stop();
      this.surface.setStatus("stopped");
      // Let the last stderr lines arrive: they usually say why (missing module, no credentials...).
      await host.pause(100);
      const tail = agent.stderrTail().filter((l) => l.trim()).slice(-3).join(" | ");
      throw new Error(
        `adk-acp could not start (${choice.command}): ${String((error as Error).message ?? error)}` +
          (tail ? `. Last output: ${tail}` : ""),
      );
    }
    const took = host.now() - started;
    this.surface.log.info(`agent ready in ${took} ms`);
    host.metric("agent_start_ms", took);
    this.surface.setStatus("idle");
    return agent;
  }

  private exited(agent: RunningAgent, info: ExitInfo): void {
    if (this.agent !== agent) return;
    if (agent.initialize === null) return; // died while starting: start() reports it, no restart loop
    this.events.lost();
    this.agent = null;
    if (info.intended || this.disposed) return;
    const how = info.spawnError ?? (info.signal ? `killed by ${info.signal}` : `exit code ${info.code}`);
    const tail = info.stderrTail.slice(-5).join("\n");
    this.surface.log.error(`agent stopped (${how})${tail ? `; last stderr:\n${tail}` : ""}`);
    this.events.crashed();
    this.surface.setStatus("stopped");
    const now = this.host.now();
    this.restarts = this.restarts.filter((t) => now - t < 60_000);
    const detail = tail ? ` Last output: ${tail.split("\n").slice(-3).join(" | ")}` : "";
    if (info.spawnError || this.restarts.length >= RESTARTS_PER_MINUTE) {
      this.surface.notice(`The agent stopped (${how}) and was not restarted.${detail}`, "error");
      void this.host.showError(`adk-acp stopped (${how}).${detail}`, ["Restart", "Show Log"]).then((choice) => {
        if (choice === "Restart") void this.restart();
        if (choice === "Show Log") this.surface.log.show();
      });
      return;
    }
    this.restarts.push(now);
    this.surface.notice(`The agent stopped (${how}); restarting it.${detail}`, "warning");
    this.host.showWarning(`adk-acp stopped (${how}) and is being restarted.${detail}`);
    void this.events.resume();
  }

  /** "Restart Agent" (and a new API key): a fresh process, a fresh restart budget. */
  async restart(): Promise<void> {
    this.agent?.stop();
    this.agent = null;
    this.restarts = [];
    await this.events.resume();
  }

  dispose(): void {
    this.disposed = true;
    this.agent?.stop();
  }
}
