// Session and turn control: session/new (asking for an API key once when the agent
// needs credentials), New Chat, Chat History and session/load (the old transcript
// stays until the replay is complete), config options, a prompt turn and its cancel,
// updates routed to the shown session, and the turn's timing metrics. The VS Code side
// (pickers, messages, the API key prompt) is injected (SessionHost).

import type * as acp from "@agentclientprotocol/sdk/unstable";
import { sessionRoots } from "./agentCommand";
import { ChatModel, configSelects } from "./chatModel";
import type { ChatSurface } from "./chatSurface";
import type { Mention } from "./messages";
import type { Metric } from "./metrics";
import { buildPrompt } from "./prompt";
import type { AgentSupervisor } from "./supervisor";

const AUTH_REQUIRED = -32000;

export interface SessionPick {
  label: string;
  description: string;
  detail: string;
  sessionId: string;
}

export interface SessionHost {
  /** The workspace folders (the first one on disk is the session's cwd). */
  folders(): { scheme: string; fsPath: string }[];
  /** The cwd when the workspace has no folder on disk. */
  processCwd(): string;
  /** Asks for a Gemini API key and stores it; false when none was given (or asking is off). */
  askForKey(): Promise<boolean>;
  showInfo(message: string): void;
  pickSession(picks: SessionPick[]): PromiseLike<SessionPick | undefined>;
  metric: Metric;
  now(): number;
}

/** The approvals side a session needs: pending questions, diffs announced by tool calls. */
export interface SessionApprovals {
  cancelAll(sessionId?: string): number;
  toolUpdate(update: acp.ToolCall | acp.ToolCallUpdate): void;
}

interface Turn {
  startedAt: number;
  firstChunkAt: number | null;
  firstItem: number;
}

export class SessionControl {
  private sessionId: string | null = null;
  /** The session whose transcript the chat shows. */
  private shownSession: string | null = null;
  /** While `session/load` replays a session: the replay is built here, the old transcript stays shown. */
  private replaying: ChatModel | null = null;
  /** Updates that arrive before the session/new answer names their session (e.g. the slash commands). */
  private early: acp.SessionNotification[] = [];
  private turn: Turn | null = null;
  private pendingRender: { id: string; startedAt: number; streamMs: number; length: number } | null = null;

  constructor(
    private readonly host: SessionHost,
    private readonly surface: ChatSurface,
    private readonly supervisor: AgentSupervisor,
    private readonly approvals: SessionApprovals,
  ) {}

  private creating: Promise<string> | null = null;

  get session(): string | null {
    return this.sessionId;
  }

  get running(): boolean {
    return this.turn !== null;
  }

  private cwd(): string {
    return sessionRoots(this.host.folders(), false).cwd ?? this.host.processCwd();
  }

  /** The workspace's other roots (multi-root), as the session's additional directories. */
  private additionalDirectories(): { additionalDirectories?: string[] } {
    const supported = this.supervisor.capabilities?.sessionCapabilities?.additionalDirectories != null;
    const { additionalDirectories } = sessionRoots(this.host.folders(), supported);
    return additionalDirectories ? { additionalDirectories } : {};
  }

  private applySessionSetup(response: { configOptions?: acp.SessionConfigOption[] | null }): void {
    const surface = this.surface;
    if (response.configOptions) surface.post(surface.model.setState({ configOptions: configSelects(response.configOptions) }));
    surface.setStatus(surface.model.state.status === "starting" ? "idle" : surface.model.state.status);
  }

  /** The session, made when there is none: one session/new at a time (the chat's "ready"
   * and a first prompt, the opening input's, may both ask while the agent starts). */
  ensureSession(): Promise<string> {
    if (this.sessionId) return Promise.resolve(this.sessionId);
    this.creating ??= this.newSession().finally(() => {
      this.creating = null;
    });
    return this.creating;
  }

  private async newSession(): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const agent = await this.supervisor.ensureAgent();
      try {
        const response = await agent.agent.request("session/new", {
          cwd: this.cwd(),
          mcpServers: [],
          ...this.additionalDirectories(),
        });
        this.applySessionSetup(response);
        this.adoptSession(response.sessionId);
        return response.sessionId;
      } catch (error) {
        const code = (error as { code?: number }).code;
        if (code === AUTH_REQUIRED && attempt === 0 && (await this.host.askForKey())) {
          await this.supervisor.restart();
          continue;
        }
        if (code === AUTH_REQUIRED) {
          throw new Error(
            `adk-acp has no credentials: ${(error as Error).message}. Run "adk-acp: Set Gemini API Key", set GEMINI_API_KEY, or run \`adk-acp --login\`.`,
          );
        }
        throw error;
      }
    }
  }

  /** After a restart: the session the chat showed is loaded again (when the agent can). */
  async resume(): Promise<void> {
    try {
      const agent = await this.supervisor.ensureAgent();
      const previous = this.sessionId;
      this.sessionId = null;
      if (previous && agent.initialize?.agentCapabilities?.loadSession) await this.loadSession(previous);
      this.surface.notice("The agent is running again.");
    } catch (error) {
      this.surface.reportError(error);
    }
  }

  /** A fresh chat; `notice` (why it started) is the first line of the new transcript. */
  async newChat(notice?: string): Promise<void> {
    if (this.turn) await this.cancel();
    const previous = this.sessionId;
    this.sessionId = null;
    this.surface.post(this.surface.model.reset());
    if (notice) this.surface.notice(notice);
    this.surface.setStatus("idle");
    const agent = this.supervisor.current;
    if (previous && agent?.initialize?.agentCapabilities?.sessionCapabilities?.close) {
      agent.agent.request("session/close", { sessionId: previous }).catch(() => undefined);
    }
    try {
      await this.ensureSession();
    } catch (error) {
      this.surface.reportError(error);
    }
  }

  async history(): Promise<void> {
    try {
      const agent = await this.supervisor.ensureAgent();
      if (!agent.initialize?.agentCapabilities?.sessionCapabilities?.list) {
        this.host.showInfo("This agent does not list its sessions.");
        return;
      }
      const listed = await agent.agent.request("session/list", { cwd: sessionRoots(this.host.folders(), false).cwd ?? null });
      const picks = listed.sessions.map((s) => ({
        label: s.title || s.sessionId,
        description: s.updatedAt ? new Date(s.updatedAt).toLocaleString() : "",
        detail: s.cwd,
        sessionId: s.sessionId,
      }));
      if (picks.length === 0) {
        this.host.showInfo("No earlier chats in this workspace.");
        return;
      }
      const pick = await this.host.pickSession(picks);
      if (pick) await this.loadSession(pick.sessionId);
    } catch (error) {
      this.surface.reportError(error);
    }
  }

  /**
   * Loads a session. The transcript on screen stays until the replay is complete, then
   * the replay replaces it at once (never a blank chat); reloading the same session (a
   * restart) keeps this client's own notices (the crash, the restart) where they were.
   */
  private async loadSession(sessionId: string): Promise<void> {
    const agent = await this.supervisor.ensureAgent();
    if (this.turn) await this.cancel();
    const surface = this.surface;
    const shown = surface.model;
    const same = this.shownSession === sessionId;
    const replay = new ChatModel();
    replay.state = { ...shown.state, usage: null, title: null };
    this.replaying = replay;
    this.sessionId = sessionId; // the replay arrives before the answer
    try {
      const response = await agent.agent.request("session/load", {
        sessionId,
        cwd: this.cwd(),
        mcpServers: [],
        ...this.additionalDirectories(),
      });
      if (same) replay.keepLocalNotices(shown);
      replay.state = { ...replay.state, status: surface.model.state.status, busy: surface.model.state.busy };
      surface.model = replay;
      this.shownSession = sessionId;
      surface.post(replay.snapshot());
      this.applySessionSetup(response ?? {});
    } finally {
      if (this.replaying === replay) this.replaying = null;
    }
  }

  async setConfig(id: string, value: string): Promise<void> {
    try {
      const sessionId = await this.ensureSession();
      const response = await this.supervisor.current!.agent.request("session/set_config_option", { sessionId, configId: id, value });
      this.surface.post(this.surface.model.setState({ configOptions: configSelects(response.configOptions) }));
      this.surface.setStatus(this.surface.model.state.status);
    } catch (error) {
      this.surface.reportError(error);
    }
  }

  // ---- a turn --------------------------------------------------------------------

  async prompt(text: string, mentions: Mention[]): Promise<void> {
    if (this.turn) return;
    const surface = this.surface;
    surface.post(surface.model.addUser(text));
    this.turn = { startedAt: this.host.now(), firstChunkAt: null, firstItem: surface.model.items.length };
    surface.send({ type: "turn", running: true });
    surface.setStatus("thinking");
    let stopReason = "end_turn";
    try {
      const sessionId = await this.ensureSession();
      const embedded = this.supervisor.capabilities?.promptCapabilities?.embeddedContext ?? false;
      if (this.turn) this.turn.startedAt = this.host.now();
      const response = await this.supervisor.current!.agent.request("session/prompt", {
        sessionId,
        prompt: buildPrompt(text, mentions, embedded),
      });
      stopReason = response.stopReason;
      if (stopReason !== "end_turn" && stopReason !== "cancelled") {
        surface.notice(`The turn stopped: ${stopReason.replace(/_/g, " ")}.`, "warning");
      }
    } catch (error) {
      stopReason = "error";
      surface.reportError(error);
    } finally {
      this.turnEnded(stopReason);
    }
  }

  turnEnded(stopReason: string): void {
    const turn = this.turn;
    if (!turn) return;
    this.turn = null;
    if (this.sessionId) this.approvals.cancelAll(this.sessionId);
    const stopAt = this.host.now();
    const items = this.surface.model.items;
    const lastAgent = items.slice(turn.firstItem).reverse().find((i) => i.kind === "agent");
    const streamMs = stopAt - turn.startedAt;
    this.pendingRender = lastAgent
      ? { id: lastAgent.id, startedAt: turn.startedAt, streamMs, length: lastAgent.kind === "agent" ? lastAgent.text.length : 0 }
      : null;
    this.host.metric("turn_stream_ms", streamMs, { stopReason });
    this.surface.send({ type: "turn", running: false, stopReason, lastAgentId: lastAgent?.id ?? null, sentAt: this.host.now() });
    this.surface.setStatus(this.supervisor.current ? "idle" : "stopped");
  }

  /** The webview drew the turn's last answer: the render metric (and the host → webview delay). */
  rendered(id: string, length: number, at: number, receivedAt?: number, sentAt?: number): void {
    const pending = this.pendingRender;
    if (!pending || pending.id !== id || length < pending.length) return;
    this.pendingRender = null;
    const renderMs = at - pending.startedAt;
    this.surface.log.info(`metric render: ${renderMs} ms in the chat view for a ${pending.streamMs} ms stream`);
    // ipcMs: host → webview delivery of the turn's last message (the webview's own clock, same machine).
    const ipcMs = receivedAt !== undefined && sentAt !== undefined ? receivedAt - sentAt : null;
    this.host.metric("render_ms", renderMs, { streamMs: pending.streamMs, length, ipcMs });
  }

  async cancel(): Promise<void> {
    const sessionId = this.sessionId;
    if (!sessionId || !this.turn) return;
    this.approvals.cancelAll(sessionId);
    await this.supervisor.current?.agent.notify("session/cancel", { sessionId }).catch(() => undefined);
  }

  // ---- updates from the agent ------------------------------------------------------

  private adoptSession(sessionId: string): void {
    this.sessionId = sessionId;
    this.shownSession = sessionId;
    const early = this.early.filter((n) => n.sessionId === sessionId);
    this.early = [];
    for (const notification of early) this.sessionUpdate(notification);
  }

  /** Whether the questions of `sessionId` are asked: the shown session's and its subagents'. */
  asks(sessionId: string): boolean {
    return sessionId === this.sessionId || (this.replaying ?? this.surface.model).hasSubagent(sessionId);
  }

  /** session/update: into the shown transcript (or the replay being loaded); a subagent's into its block. */
  sessionUpdate(params: acp.SessionNotification): void {
    const target = this.replaying ?? this.surface.model;
    const child = params.sessionId !== this.sessionId && target.hasSubagent(params.sessionId) ? params.sessionId : undefined;
    if (params.sessionId !== this.sessionId && child === undefined) {
      if (this.sessionId === null && this.early.length < 1000) this.early.push(params);
      return;
    }
    if (this.turn && !child && this.turn.firstChunkAt === null && params.update.sessionUpdate === "agent_message_chunk") {
      this.turn.firstChunkAt = this.host.now();
      this.host.metric("first_chunk_ms", this.turn.firstChunkAt - this.turn.startedAt);
    }
    const update = params.update;
    if (update.sessionUpdate === "tool_call" || update.sessionUpdate === "tool_call_update") this.approvals.toolUpdate(update);
    if (this.replaying) {
      this.replaying.apply(update, child);
      return;
    }
    const model = this.surface.model;
    const before = model.state.configOptions;
    this.surface.post(model.apply(update, child));
    if (model.state.configOptions !== before) this.surface.setStatus(model.state.status);
  }
}
