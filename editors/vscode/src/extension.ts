// Entry point: wires the agent process, the chat view, approvals, editor I/O,
// the status bar and the log together on the VS Code API.

import type * as acp from "@agentclientprotocol/sdk";
import * as childProcess from "node:child_process";
import * as fs from "node:fs";
import * as vscode from "vscode";
import { AgentNotInstalled, resolveAgentCommand, sessionRoots } from "./agentCommand";
import { AgentProcess, type ExitInfo } from "./agentProcess";
import { ChatModel, configSelects, type Op } from "./chatModel";
import { ChatViewProvider } from "./chatView";
import { EditHistory } from "./editHistory";
import { DiffStore, ORIGINAL_SCHEME, PROPOSED_SCHEME, type Proposal } from "./diffDocuments";
import { FsHandler } from "./fsHandler";
import type { FromView, Mention } from "./messages";
import { PermissionBroker, type Question } from "./permissions";
import { buildPrompt } from "./prompt";
import { readSettings, type Settings } from "./settings";
import { TerminalManager } from "./terminals";

const SECRET_KEY = "adkAcp.geminiApiKey";
const AUTH_REQUIRED = -32000;

/** The settings (checked); each problem is named, and its setting keeps the default. */
export function currentSettings(): { settings: Settings; problems: string[] } {
  const config = vscode.workspace.getConfiguration("adkAcp");
  return readSettings((key) => config.get(key));
}

class UntrustedWorkspace extends Error {
  constructor() {
    super(
      "This workspace is not trusted, so adk-acp does not start its agent here (it reads, edits and runs commands). " +
        "Trust the workspace (Manage Workspace Trust) to chat.",
    );
  }
}

function metric(name: string, value: number, extra: Record<string, unknown> = {}): void {
  const file = process.env["ADK_ACP_VSCODE_METRICS"];
  if (!file) return;
  try {
    fs.appendFileSync(file, JSON.stringify({ name, value, at: Date.now(), ...extra }) + "\n");
  } catch {
    // metrics are best effort
  }
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Saves `doc`. save() is false when the document is not dirty (auto save was first) or
 * when another save of it is under way (auto save on a focus change): then its end counts.
 */
async function saveDocument(doc: vscode.TextDocument, waitMs = 10_000): Promise<boolean> {
  if ((await doc.save()) || !doc.isDirty) return true;
  return new Promise<boolean>((resolve) => {
    const done = (saved: boolean): void => {
      clearTimeout(timer);
      subscription.dispose();
      resolve(saved);
    };
    const subscription = vscode.workspace.onDidSaveTextDocument((saved) => {
      if (saved === doc && !doc.isDirty) done(true);
    });
    const timer = setTimeout(() => done(!doc.isDirty), waitMs);
  });
}

class Controller implements vscode.Disposable {
  model = new ChatModel();
  /** While `session/load` replays a session: the replay is built here, the old transcript stays shown. */
  private replaying: ChatModel | null = null;
  readonly log = vscode.window.createOutputChannel("adk-acp", { log: true });
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  readonly diffs = new DiffStore({ from: (c) => vscode.Uri.from(c) });
  readonly broker: PermissionBroker;
  private readonly fsHandler: FsHandler;
  private readonly terminals: TerminalManager;
  readonly edits = new EditHistory();
  private agent: AgentProcess | null = null;
  private starting: Promise<AgentProcess> | null = null;
  private sessionId: string | null = null;
  private apiKey: string | undefined;
  private turn: { startedAt: number; firstChunkAt: number | null; stopAt: number | null; firstItem: number } | null = null;
  private restarts: number[] = [];
  private disposed = false;
  view: ChatViewProvider | null = null;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.status.command = "adkAcp.focus";
    this.status.name = "adk-acp";
    this.setStatus("idle");
    this.status.show();
    this.broker = new PermissionBroker(this.diffs, {
      showDiff: (p) => this.showDiff(p),
      closeDiff: (p) => this.closeDiff(p),
      ask: (q, signal) => this.ask(q, signal),
      pendingChanged: (current, answered) => this.pendingChanged(current, answered),
      now: () => Date.now(),
      metric: (name, value) => {
        this.log.info(`metric ${name}: ${value} ms`);
        metric(name, value);
      },
    });
    this.fsHandler = new FsHandler({
      openText: (p) =>
        vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === p)?.getText(),
      readDisk: (p) => fs.promises.readFile(p, "utf8"),
      writeThroughEditor: (p, content) => this.writeThroughEditor(p, content),
    });
    this.terminals = new TerminalManager(
      {
        spawn: (command, args, options) => childProcess.spawn(command, args, options),
        createTerminal: (name, pty) => {
          const terminal = vscode.window.createTerminal({ name, pty: pty as unknown as vscode.Pseudoterminal });
          terminal.show(true);
          return terminal;
        },
        killGroup: (pid, signal) => process.kill(-pid, signal),
      },
      process.env,
    );
  }

  // ---- state shown to the user -------------------------------------------------

  private setStatus(state: "idle" | "thinking" | "waiting for approval" | "starting" | "stopped"): void {
    const model = this.model.state.configOptions.find((o) => o.category === "model");
    const modelName = model?.options.find((o) => o.value === model.currentValue)?.name ?? model?.currentValue;
    const icon = state === "thinking" || state === "starting" ? "$(loading~spin)" : state === "waiting for approval" ? "$(bell-dot)" : "$(sparkle)";
    this.status.text = `${icon} adk-acp${modelName ? `: ${modelName}` : ""} · ${state}`;
    this.status.tooltip = `adk-acp: ${state}${modelName ? ` (model ${modelName})` : ""}`;
    this.post(this.model.setState({ status: state, busy: state === "thinking" || state === "waiting for approval" }));
    void vscode.commands.executeCommand("setContext", "adkAcp.busy", state === "thinking" || state === "waiting for approval");
  }

  post(ops: Op[]): void {
    if (ops.length) this.view?.post({ type: "ops", ops });
  }

  // ---- the agent process -------------------------------------------------------

  private workspaceRoot(): string | undefined {
    return sessionRoots((vscode.workspace.workspaceFolders ?? []).map((f) => f.uri), false).cwd;
  }

  async ensureAgent(): Promise<AgentProcess> {
    if (this.agent?.alive) return this.agent;
    if (!this.starting) {
      this.starting = this.startAgent().finally(() => {
        this.starting = null;
      });
    }
    return this.starting;
  }

  private async startAgent(): Promise<AgentProcess> {
    if (!vscode.workspace.isTrusted) throw new UntrustedWorkspace();
    const { settings, problems } = currentSettings();
    if (problems.length) throw new Error(`adk-acp's settings need a fix: ${problems.join(" ")}`);
    const choice = resolveAgentCommand({
      setting: settings.command,
      args: settings.args,
      pathEnv: process.env["PATH"],
      workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
      isExecutable,
    });
    this.apiKey = await this.context.secrets.get(SECRET_KEY);
    const env: NodeJS.ProcessEnv = { ...process.env, ...settings.env };
    if (this.apiKey && !env["GEMINI_API_KEY"]) env["GEMINI_API_KEY"] = this.apiKey;
    this.setStatus("starting");
    this.log.info(`starting ${choice.command} ${choice.args.join(" ")} (${choice.source})`);
    const started = Date.now();
    const agent = new AgentProcess({
      command: choice.command,
      args: choice.args,
      env,
      cwd: this.workspaceRoot(),
      spawn: (command, args, options) => childProcess.spawn(command, args, options),
      log: (line) => this.log.info(line),
      secrets: () => (this.apiKey ? [this.apiKey] : []),
      handlers: {
        requestPermission: (params, at) => this.requestPermission(params, at),
        sessionUpdate: (params) => this.sessionUpdate(params),
        readTextFile: (params) => this.fsHandler.read(params),
        writeTextFile: (params) => this.fsHandler.write(params),
        createTerminal: (params) => this.terminals.create(params),
        terminalOutput: (params) => this.terminals.output(params),
        waitForTerminalExit: (params) => this.terminals.waitForExit(params),
        killTerminal: (params) => this.terminals.kill(params),
        releaseTerminal: (params) => this.terminals.release(params),
      },
      onExit: (info) => this.agentExited(agent, info),
    });
    this.agent = agent;
    try {
      await agent.start();
    } catch (error) {
      agent.stop();
      this.setStatus("stopped");
      // Let the last stderr lines arrive: they usually say why (missing module, no credentials...).
      await new Promise((resolve) => setTimeout(resolve, 100));
      const tail = agent.stderrTail().filter((l) => l.trim()).slice(-3).join(" | ");
      throw new Error(
        `adk-acp could not start (${choice.command}): ${String((error as Error).message ?? error)}` +
          (tail ? `. Last output: ${tail}` : ""),
      );
    }
    this.log.info(`agent ready in ${Date.now() - started} ms`);
    metric("agent_start_ms", Date.now() - started);
    this.setStatus("idle");
    return agent;
  }

  private agentExited(agent: AgentProcess, info: ExitInfo): void {
    if (this.agent !== agent) return;
    if (agent.initialize === null) return; // died while starting: startAgent reports it, no restart loop
    this.broker.cancelAll();
    this.agent = null;
    if (info.intended || this.disposed) return;
    const how = info.spawnError ?? (info.signal ? `killed by ${info.signal}` : `exit code ${info.code}`);
    const tail = info.stderrTail.slice(-5).join("\n");
    this.log.error(`agent stopped (${how})${tail ? `; last stderr:\n${tail}` : ""}`);
    this.turnEnded("cancelled");
    this.setStatus("stopped");
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < 60_000);
    const detail = tail ? ` Last output: ${tail.split("\n").slice(-3).join(" | ")}` : "";
    if (info.spawnError || this.restarts.length >= 3) {
      this.post(this.model.addNotice(`The agent stopped (${how}) and was not restarted.${detail}`, "error"));
      void vscode.window.showErrorMessage(`adk-acp stopped (${how}).${detail}`, "Restart", "Show Log").then((choice) => {
        if (choice === "Restart") void this.restart();
        if (choice === "Show Log") this.log.show();
      });
      return;
    }
    this.restarts.push(now);
    this.post(this.model.addNotice(`The agent stopped (${how}); restarting it.${detail}`, "warning"));
    void vscode.window.showWarningMessage(`adk-acp stopped (${how}) and is being restarted.${detail}`);
    void this.resumeAfterRestart();
  }

  private async resumeAfterRestart(): Promise<void> {
    try {
      const agent = await this.ensureAgent();
      const previous = this.sessionId;
      this.sessionId = null;
      if (previous && agent.initialize?.agentCapabilities?.loadSession) {
        await this.loadSession(previous);
      }
      this.post(this.model.addNotice("The agent is running again.", "info"));
    } catch (error) {
      this.reportError(error);
    }
  }

  async restart(): Promise<void> {
    this.agent?.stop();
    this.agent = null;
    this.restarts = [];
    await this.resumeAfterRestart();
  }

  reportError(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.log.error(message);
    this.post(this.model.addNotice(message, "error"));
    const actions =
      error instanceof UntrustedWorkspace
        ? ["Manage Workspace Trust"]
        : error instanceof AgentNotInstalled || /could not start|settings need a fix/.test(message)
          ? ["Open Settings", "Show Log"]
          : ["Show Log"];
    void vscode.window.showErrorMessage(message, ...actions).then((choice) => {
      if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "adkAcp");
      if (choice === "Manage Workspace Trust") void vscode.commands.executeCommand("workbench.trust.manage");
      if (choice === "Show Log") this.log.show();
    });
  }

  // ---- sessions ------------------------------------------------------------------

  private applySessionSetup(response: { configOptions?: acp.SessionConfigOption[] | null }): void {
    if (response.configOptions) this.post(this.model.setState({ configOptions: configSelects(response.configOptions) }));
    this.setStatus(this.model.state.status === "starting" ? "idle" : this.model.state.status);
  }

  /** The workspace's other roots (multi-root), as the session's additional directories. */
  additionalDirectories(): { additionalDirectories?: string[] } {
    const supported = this.agent?.initialize?.agentCapabilities?.sessionCapabilities?.additionalDirectories != null;
    const { additionalDirectories } = sessionRoots((vscode.workspace.workspaceFolders ?? []).map((f) => f.uri), supported);
    return additionalDirectories ? { additionalDirectories } : {};
  }

  private async askForKey(): Promise<boolean> {
    if (!currentSettings().settings.askForApiKey) return false;
    const key = await vscode.window.showInputBox({
      title: "adk-acp needs a Gemini API key",
      prompt: "Kept in VS Code's secret storage, never in settings. (Or set GEMINI_API_KEY, or run `adk-acp --login`.)",
      password: true,
      ignoreFocusOut: true,
    });
    if (!key) return false;
    await this.context.secrets.store(SECRET_KEY, key.trim());
    return true;
  }

  async ensureSession(): Promise<string> {
    if (this.sessionId) return this.sessionId;
    for (let attempt = 0; ; attempt++) {
      const agent = await this.ensureAgent();
      try {
        const response = await agent.agent.request("session/new", {
          cwd: this.workspaceRoot() ?? process.cwd(),
          mcpServers: [],
          ...this.additionalDirectories(),
        });
        this.applySessionSetup(response);
        this.adoptSession(response.sessionId);
        return response.sessionId;
      } catch (error) {
        const code = (error as { code?: number }).code;
        if (code === AUTH_REQUIRED && attempt === 0 && (await this.askForKey())) {
          await this.restart();
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

  async newChat(): Promise<void> {
    if (this.turn) await this.cancel();
    const previous = this.sessionId;
    this.sessionId = null;
    this.post(this.model.reset());
    this.setStatus("idle");
    if (previous && this.agent?.initialize?.agentCapabilities?.sessionCapabilities?.close) {
      this.agent.agent.request("session/close", { sessionId: previous }).catch(() => undefined);
    }
    try {
      await this.ensureSession();
    } catch (error) {
      this.reportError(error);
    }
  }

  async history(): Promise<void> {
    try {
      const agent = await this.ensureAgent();
      if (!agent.initialize?.agentCapabilities?.sessionCapabilities?.list) {
        void vscode.window.showInformationMessage("This agent does not list its sessions.");
        return;
      }
      const listed = await agent.agent.request("session/list", { cwd: this.workspaceRoot() ?? null });
      const picks = listed.sessions.map((s) => ({
        label: s.title || s.sessionId,
        description: s.updatedAt ? new Date(s.updatedAt).toLocaleString() : "",
        detail: s.cwd,
        sessionId: s.sessionId,
      }));
      if (picks.length === 0) {
        void vscode.window.showInformationMessage("No earlier chats in this workspace.");
        return;
      }
      const pick = await vscode.window.showQuickPick(picks, { title: "adk-acp: open an earlier chat", matchOnDetail: true });
      if (pick) await this.loadSession(pick.sessionId);
    } catch (error) {
      this.reportError(error);
    }
  }

  /**
   * Loads a session. The transcript on screen stays until the replay is complete, then
   * the replay replaces it at once (never a blank chat); reloading the same session (a
   * restart) keeps this client's own notices (the crash, the restart) where they were.
   */
  private async loadSession(sessionId: string): Promise<void> {
    const agent = await this.ensureAgent();
    if (this.turn) await this.cancel();
    const shown = this.model;
    const same = this.shownSession === sessionId;
    const replay = new ChatModel();
    replay.state = { ...shown.state, usage: null, title: null };
    this.replaying = replay;
    this.sessionId = sessionId; // the replay arrives before the answer
    try {
      const response = await agent.agent.request("session/load", {
        sessionId,
        cwd: this.workspaceRoot() ?? process.cwd(),
        mcpServers: [],
        ...this.additionalDirectories(),
      });
      if (same) replay.keepLocalNotices(shown);
      replay.state = { ...replay.state, status: this.model.state.status, busy: this.model.state.busy };
      this.model = replay;
      this.shownSession = sessionId;
      this.post(replay.snapshot());
      this.applySessionSetup(response ?? {});
    } finally {
      if (this.replaying === replay) this.replaying = null;
    }
  }

  async setConfig(id: string, value: string): Promise<void> {
    try {
      const sessionId = await this.ensureSession();
      const response = await this.agent!.agent.request("session/set_config_option", { sessionId, configId: id, value });
      this.post(this.model.setState({ configOptions: configSelects(response.configOptions) }));
      this.setStatus(this.model.state.status);
    } catch (error) {
      this.reportError(error);
    }
  }

  // ---- a turn --------------------------------------------------------------------

  async prompt(text: string, mentions: Mention[]): Promise<void> {
    if (this.turn) return;
    this.post(this.model.addUser(text));
    this.turn = { startedAt: Date.now(), firstChunkAt: null, stopAt: null, firstItem: this.model.items.length };
    this.view?.post({ type: "turn", running: true });
    this.setStatus("thinking");
    let stopReason = "end_turn";
    try {
      const sessionId = await this.ensureSession();
      const embedded = this.agent?.initialize?.agentCapabilities?.promptCapabilities?.embeddedContext ?? false;
      if (this.turn) this.turn.startedAt = Date.now();
      const response = await this.agent!.agent.request("session/prompt", {
        sessionId,
        prompt: buildPrompt(text, mentions, embedded),
      });
      stopReason = response.stopReason;
      if (stopReason !== "end_turn" && stopReason !== "cancelled") {
        this.post(this.model.addNotice(`The turn stopped: ${stopReason.replace(/_/g, " ")}.`, "warning"));
      }
    } catch (error) {
      stopReason = "error";
      this.reportError(error);
    } finally {
      this.turnEnded(stopReason);
    }
  }

  private turnEnded(stopReason: string): void {
    const turn = this.turn;
    if (!turn) return;
    this.turn = null;
    if (this.sessionId) this.broker.cancelAll(this.sessionId);
    turn.stopAt = Date.now();
    const lastAgent = this.model.items.slice(turn.firstItem).reverse().find((i) => i.kind === "agent");
    const streamMs = turn.stopAt - turn.startedAt;
    this.pendingRender = lastAgent ? { id: lastAgent.id, startedAt: turn.startedAt, streamMs, length: lastAgent.kind === "agent" ? lastAgent.text.length : 0 } : null;
    metric("turn_stream_ms", streamMs, { stopReason });
    this.view?.post({ type: "turn", running: false, stopReason, lastAgentId: lastAgent?.id ?? null, sentAt: Date.now() });
    this.setStatus(this.agent ? "idle" : "stopped");
  }

  private pendingRender: { id: string; startedAt: number; streamMs: number; length: number } | null = null;

  rendered(id: string, length: number, at: number, receivedAt?: number, sentAt?: number): void {
    const pending = this.pendingRender;
    if (!pending || pending.id !== id || length < pending.length) return;
    this.pendingRender = null;
    const renderMs = at - pending.startedAt;
    this.log.info(`metric render: ${renderMs} ms in the chat view for a ${pending.streamMs} ms stream`);
    // ipcMs: host → webview delivery of the turn's last message (the webview's own clock, same machine).
    const ipcMs = receivedAt !== undefined && sentAt !== undefined ? receivedAt - sentAt : null;
    metric("render_ms", renderMs, { streamMs: pending.streamMs, length, ipcMs });
  }

  async cancel(): Promise<void> {
    const sessionId = this.sessionId;
    if (!sessionId || !this.turn) return;
    this.broker.cancelAll(sessionId);
    await this.agent?.agent.notify("session/cancel", { sessionId }).catch(() => undefined);
  }

  /** Updates that arrive before the session/new answer names their session (e.g. the slash commands). */
  private early: acp.SessionNotification[] = [];

  /** The session whose transcript the chat shows. */
  private shownSession: string | null = null;

  private adoptSession(sessionId: string): void {
    this.sessionId = sessionId;
    this.shownSession = sessionId;
    const early = this.early.filter((n) => n.sessionId === sessionId);
    this.early = [];
    for (const notification of early) this.sessionUpdate(notification);
  }

  private sessionUpdate(params: acp.SessionNotification): void {
    if (params.sessionId !== this.sessionId) {
      if (this.sessionId === null && this.early.length < 1000) this.early.push(params);
      return;
    }
    if (this.turn && this.turn.firstChunkAt === null && params.update.sessionUpdate === "agent_message_chunk") {
      this.turn.firstChunkAt = Date.now();
      metric("first_chunk_ms", this.turn.firstChunkAt - this.turn.startedAt);
    }
    const update = params.update;
    if (update.sessionUpdate === "tool_call" || update.sessionUpdate === "tool_call_update") this.prepareDiffs(update);
    if (this.replaying) {
      this.replaying.apply(update);
      return;
    }
    const before = this.model.state.configOptions;
    this.post(this.model.apply(update));
    if (this.model.state.configOptions !== before) this.setStatus(this.model.state.status);
  }

  // ---- approvals ---------------------------------------------------------------------

  private readonly prepared = new Map<string, Proposal[]>();

  /** Loads the virtual documents of an announced edit ahead of its permission request. */
  private prepareDiffs(update: acp.ToolCall | acp.ToolCallUpdate): void {
    if (update.status === "completed" || update.status === "failed") {
      for (const proposal of this.prepared.get(update.toolCallId) ?? []) {
        if (!this.broker.uses(proposal)) this.diffs.remove(proposal);
      }
      this.prepared.delete(update.toolCallId);
      return;
    }
    for (const content of update.content ?? []) {
      if (content.type !== "diff") continue;
      const proposal = this.diffs.prepare(content.path, content.oldText, content.newText);
      const list = this.prepared.get(update.toolCallId) ?? [];
      if (list.includes(proposal)) continue;
      list.push(proposal);
      this.prepared.set(update.toolCallId, list);
      void vscode.workspace.openTextDocument(proposal.original as vscode.Uri).then(undefined, () => undefined);
      void vscode.workspace.openTextDocument(proposal.proposed as vscode.Uri).then(undefined, () => undefined);
    }
  }

  private requestPermission(params: acp.RequestPermissionRequest, at: number): Promise<acp.RequestPermissionResponse> {
    if (params.sessionId !== this.sessionId) return Promise.resolve({ outcome: { outcome: "cancelled" } });
    return this.broker.request(params, at);
  }

  private async showDiff(proposal: Proposal): Promise<void> {
    await vscode.commands.executeCommand("vscode.diff", proposal.original, proposal.proposed, proposal.title, {
      preview: false,
      preserveFocus: false,
    });
    void vscode.commands.executeCommand("setContext", "adkAcp.pendingDiff", true);
  }

  private async closeDiff(proposal: Proposal): Promise<void> {
    const target = proposal.proposed.toString();
    const tabs: vscode.Tab[] = [];
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        if (tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === target) tabs.push(tab);
      }
    }
    if (tabs.length) await vscode.window.tabGroups.close(tabs, true);
  }

  private async ask(question: Question, signal: AbortSignal): Promise<string | undefined> {
    const names = question.options.map((o) => o.name);
    const detail = question.detail ? ` — ${question.detail.split("\n")[0]}` : "";
    const where = question.hasDiff ? " (see the diff editor)" : "";
    const pick = vscode.window.showInformationMessage(`adk-acp: ${question.title}${detail}${where}`, ...names);
    let clicked = false;
    const picked = pick.then((name) => {
      clicked = true;
      return name;
    });
    const aborted = new Promise<undefined>((resolve) => signal.addEventListener("abort", () => resolve(undefined)));
    const name = await Promise.race([picked, aborted]);
    if (!clicked) {
      // Answered elsewhere (diff editor, chat card) or cancelled: the extension API cannot
      // close one notification, so the toasts are put away into the notification centre.
      void vscode.commands.executeCommand("notifications.hideToasts").then(undefined, () => undefined);
    }
    return question.options.find((o) => o.name === name)?.optionId;
  }

  private pendingChanged(current: Question | null, answered?: { key: string; answer: string }): void {
    if (answered) {
      const option = answered.answer === "cancelled" ? "cancelled" : answered.answer;
      this.post(this.model.answerPermission(answered.key, option));
    }
    if (current && !this.model.get(current.key)) {
      this.post(this.model.addPermission({ id: current.key, title: current.title, detail: current.detail, options: current.options }));
    }
    void vscode.commands.executeCommand("setContext", "adkAcp.pendingDiff", current?.hasDiff ?? false);
    if (this.turn) this.setStatus(current ? "waiting for approval" : "thinking");
  }

  answerFromEditor(kinds: acp.PermissionOptionKind[]): void {
    if (!this.broker.answerKind(kinds)) void vscode.window.showInformationMessage("adk-acp is not waiting for an answer.");
  }

  async chooseOption(): Promise<void> {
    const current = this.broker.current;
    if (!current) return;
    const pick = await vscode.window.showQuickPick(
      current.options.map((o) => ({ label: o.name, description: o.kind.replace(/_/g, " "), optionId: o.optionId })),
      { title: current.title },
    );
    if (pick) this.broker.answer(current.key, pick.optionId);
  }

  // ---- editor I/O ------------------------------------------------------------------

  private async writeThroughEditor(filePath: string, content: string): Promise<void> {
    const uri = vscode.Uri.file(filePath);
    const edit = new vscode.WorkspaceEdit();
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === filePath);
    let before: string | null = null;
    if (open || fs.existsSync(filePath)) {
      const doc = open ?? (await vscode.workspace.openTextDocument(uri));
      before = doc.getText();
      const whole = new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
      edit.replace(uri, whole, content);
    } else {
      edit.createFile(uri, { ignoreIfExists: true });
      edit.insert(uri, new vscode.Position(0, 0), content);
    }
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`the editor refused the edit of ${filePath}`);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: false, preserveFocus: true });
    if (!(await saveDocument(doc))) throw new Error(`the editor could not save ${filePath}`);
    this.edits.record({ path: filePath, before, after: doc.getText() });
  }

  /** "Undo Last Agent Edit": one approved edit of the agent per call, newest first. */
  async undoLastEdit(): Promise<void> {
    const result = await this.edits.undo({
      read: async (p) => {
        const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === p);
        if (open) return open.getText();
        return fs.existsSync(p) ? fs.promises.readFile(p, "utf8") : null;
      },
      write: async (p, content) => {
        const uri = vscode.Uri.file(p);
        const doc = await vscode.workspace.openTextDocument(uri);
        const edit = new vscode.WorkspaceEdit();
        edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), content);
        if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`the editor refused to undo the edit of ${p}`);
        if (!(await saveDocument(doc))) throw new Error(`the editor could not save ${p}`);
      },
      remove: async (p) => {
        const edit = new vscode.WorkspaceEdit();
        edit.deleteFile(vscode.Uri.file(p), { ignoreIfNotExists: true });
        await vscode.workspace.applyEdit(edit);
      },
    });
    if ("refused" in result) {
      void vscode.window.showInformationMessage(`adk-acp: ${result.refused}`);
      return;
    }
    const what = result.undone.before === null ? "removed" : "restored";
    this.post(this.model.addNotice(`Undid the agent's edit of ${vscode.workspace.asRelativePath(result.undone.path)} (${what}).`));
  }

  /** Files (explorer, editor tab, drag and drop) as @-mentions in the chat's composer. */
  fileMentions(uris: readonly vscode.Uri[]): Mention[] {
    return uris
      .filter((u) => u.scheme === "file")
      .map((u) => ({ kind: "file" as const, path: u.fsPath, label: vscode.workspace.asRelativePath(u) }));
  }

  async openLocation(filePath: string, line?: number | null): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(filePath));
    const position = new vscode.Position(Math.max(0, (line ?? 1) - 1), 0);
    await vscode.window.showTextDocument(doc, { selection: new vscode.Range(position, position), preview: true });
  }

  async searchFiles(query: string): Promise<{ path: string; label: string }[]> {
    const safe = query.replace(/[[\]{}*?!]/g, "");
    const glob = safe ? `**/*${safe}*` : "**/*";
    const found = await vscode.workspace.findFiles(glob, "**/{node_modules,.git,.venv}/**", 30);
    return found
      .map((u) => ({ path: u.fsPath, label: vscode.workspace.asRelativePath(u) }))
      .sort((a, b) => a.label.length - b.label.length)
      .slice(0, 15);
  }

  currentSelection(): Mention | null {
    const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme === "file");
    if (!editor || editor.document.uri.scheme !== "file" || editor.selection.isEmpty) return null;
    const s = editor.selection;
    const startLine = s.start.line + 1;
    const endLine = s.end.line + 1;
    return {
      kind: "selection",
      path: editor.document.uri.fsPath,
      label: `${vscode.workspace.asRelativePath(editor.document.uri)}:${startLine}-${endLine}`,
      startLine,
      endLine,
      text: editor.document.getText(s),
    };
  }

  async handle(message: FromView): Promise<void> {
    switch (message.type) {
      case "ready":
        this.view?.post({ type: "ops", ops: this.model.snapshot() });
        this.view?.post({ type: "turn", running: this.turn !== null });
        if (!this.sessionId) this.ensureSession().catch((error) => this.reportError(error));
        return;
      case "prompt":
        return this.prompt(message.text, message.mentions);
      case "cancel":
        return this.cancel();
      case "newChat":
        return this.newChat();
      case "history":
        return this.history();
      case "config":
        return this.setConfig(message.id, message.value);
      case "open":
        return this.openLocation(message.path, message.line).catch((e) => this.reportError(e));
      case "permission":
        this.broker.answer(message.key, message.optionId);
        return;
      case "searchFiles":
        this.view?.post({
          type: "files",
          requestId: message.requestId,
          files: await this.searchFiles(message.query),
          selection: this.currentSelection(),
        });
        return;
      case "dropped": {
        const uris: vscode.Uri[] = [];
        for (const text of message.uris) {
          try {
            uris.push(text.startsWith("/") ? vscode.Uri.file(text) : vscode.Uri.parse(text, true));
          } catch {
            this.log.warn(`dropped something that is not a file: ${text}`);
          }
        }
        for (const mention of this.fileMentions(uris)) this.view?.post({ type: "mention", mention });
        return;
      }
      case "rendered":
        this.rendered(message.id, message.length, message.at, message.receivedAt, message.sentAt);
        return;
    }
  }

  dispose(): void {
    this.disposed = true;
    this.broker.cancelAll();
    this.agent?.stop();
    this.terminals.dispose();
    this.status.dispose();
    this.log.dispose();
  }
}

export function activate(context: vscode.ExtensionContext): void {
  const started = performance.now();
  const controller = new Controller(context);
  context.subscriptions.push(controller);
  const provider = {
    provideTextDocumentContent: (uri: vscode.Uri) => controller.diffs.provide(uri),
  };
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(ORIGINAL_SCHEME, provider),
    vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, provider),
  );
  const view = new ChatViewProvider(
    context.extensionUri,
    (message) => {
      controller.handle(message).catch((error) => controller.reportError(error));
    },
    (event) => {
      controller.log.info(`chat view ${event} (${(performance.now() - started).toFixed(0)} ms after activation)`);
      metric(`view_${event}`, Date.now());
    },
  );
  controller.view = view;
  context.subscriptions.push(
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewType, view, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
  );
  const command = (id: string, run: () => unknown): void => {
    context.subscriptions.push(vscode.commands.registerCommand(id, run));
  };
  command("adkAcp.newChat", () => controller.newChat());
  command("adkAcp.history", () => controller.history());
  command("adkAcp.cancel", () => controller.cancel());
  command("adkAcp.restart", () => controller.restart());
  command("adkAcp.showLog", () => controller.log.show());
  command("adkAcp.focus", async () => {
    await vscode.commands.executeCommand("adkAcp.chat.focus");
    view.post({ type: "focus" });
  });
  command("adkAcp.setApiKey", async () => {
    const key = await vscode.window.showInputBox({ title: "Gemini API key for adk-acp", password: true, ignoreFocusOut: true });
    if (key) {
      await context.secrets.store(SECRET_KEY, key.trim());
      await controller.restart();
    }
  });
  command("adkAcp.clearApiKey", async () => {
    await context.secrets.delete(SECRET_KEY);
    void vscode.window.showInformationMessage("adk-acp: the API key is forgotten.");
  });
  command("adkAcp.mentionSelection", async () => {
    const mention = controller.currentSelection();
    if (!mention) return;
    await vscode.commands.executeCommand("adkAcp.chat.focus");
    view.post({ type: "mention", mention });
  });
  command("adkAcp.undoLastEdit", () => controller.undoLastEdit());
  context.subscriptions.push(
    vscode.commands.registerCommand("adkAcp.addToChat", async (uri?: vscode.Uri, uris?: vscode.Uri[]) => {
      const selection = uri === undefined ? controller.currentSelection() : null;
      const targets = uris?.length ? uris : uri ? [uri] : vscode.window.activeTextEditor ? [vscode.window.activeTextEditor.document.uri] : [];
      const mentions = selection ? [selection] : controller.fileMentions(targets);
      if (!mentions.length) return;
      await vscode.commands.executeCommand("adkAcp.chat.focus");
      for (const mention of mentions) view.post({ type: "mention", mention });
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      controller.post(controller.model.addNotice("The workspace is trusted now: starting the agent."));
      void controller.newChat();
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration("adkAcp")) return;
      const { problems } = currentSettings();
      if (problems.length) {
        void vscode.window.showWarningMessage(`adk-acp's settings need a fix: ${problems.join(" ")}`, "Open Settings").then((choice) => {
          if (choice) void vscode.commands.executeCommand("workbench.action.openSettings", "adkAcp");
        });
      }
    }),
  );
  command("adkAcp.approve", () => controller.answerFromEditor(["allow_once", "allow_always"]));
  command("adkAcp.reject", () => controller.answerFromEditor(["reject_once", "reject_always"]));
  command("adkAcp.chooseOption", () => controller.chooseOption());
  const took = performance.now() - started;
  controller.log.info(`activated in ${took.toFixed(1)} ms`);
  metric("activation_ms", took);
}

export function deactivate(): void {
  // The controller is disposed with the context's subscriptions.
}
