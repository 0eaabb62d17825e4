// Activation and wiring: each piece (agent supervisor, session and turn control,
// approvals, editor I/O, commands, metrics) gets its VS Code side from vscodeHost.ts;
// the chat view, the diff documents, fs and terminal handlers are wired to them here.

import * as childProcess from "node:child_process";
import * as fs from "node:fs";
import * as vscode from "vscode";
import { ApiKeyStore } from "./apiKey";
import { Approvals } from "./approvals";
import { ChatSurface } from "./chatSurface";
import { ChatViewProvider } from "./chatView";
import { handleViewMessage, registerCommands, type Pieces } from "./commands";
import { DiffStore, ORIGINAL_SCHEME, PROPOSED_SCHEME, REVIEW_SCHEME } from "./diffDocuments";
import { EditHistory } from "./editHistory";
import { EditorIo } from "./editorIo";
import { FsHandler } from "./fsHandler";
import { HunkReview } from "./hunkReview";
import { fileMetrics } from "./metrics";
import { OpeningInput } from "./openingInput";
import { adkMeta, EDIT_REVIEW } from "./permissions";
import { SessionControl } from "./sessions";
import { SecretSettings } from "./settingsSecrets";
import { AgentSupervisor } from "./supervisor";
import { TerminalManager } from "./terminals";
import * as host from "./vscodeHost";

function terminalManager(): TerminalManager {
  return new TerminalManager(
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

export function activate(context: vscode.ExtensionContext): void {
  const started = performance.now();
  const metric = fileMetrics({
    file: process.env["ADK_ACP_VSCODE_METRICS"],
    append: (file, line) => fs.appendFileSync(file, line),
    now: () => Date.now(),
  });
  const log = vscode.window.createOutputChannel("adk-acp", { log: true });
  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  status.command = "adkAcp.focus";
  status.name = "adk-acp";
  const surface = new ChatSurface(host.surfaceHost(log, status));
  surface.setStatus("idle");
  status.show();

  const keys = new ApiKeyStore(host.keyHost(context.secrets));
  const secretSettings = new SecretSettings(host.secretSettingsHost(context.secrets));
  // The proposed side is editable when the agent takes the user's version (issue 36).
  const diffs = new DiffStore({ from: (c) => vscode.Uri.from(c) }, () => adkMeta(supervisor.capabilities?._meta)?.[EDIT_REVIEW] === true);
  const editorSide = host.editorHost();
  const editor = new EditorIo(editorSide, surface, new EditHistory());
  const fsHandler = new FsHandler({
    openText: (p) => editorSide.openDocument(p)?.getText(),
    readDisk: (p) => fs.promises.readFile(p, "utf8"),
    writeThroughEditor: (p, content) => editor.writeThroughEditor(p, content),
  });
  const terminals = terminalManager();
  // The supervisor, the sessions and the approvals refer to each other through these late-bound callbacks.
  const approvals: Approvals = new Approvals(host.approvalsHost(metric, () => refreshLenses()), surface, diffs, (id) => sessions.asks(id), () => sessions.running);
  const supervisor: AgentSupervisor = new AgentSupervisor(host.supervisorHost(keys, secretSettings, metric), surface, {
    handlers: {
      requestPermission: (params, at) => approvals.request(params, at),
      sessionUpdate: (params) => sessions.sessionUpdate(params),
      readTextFile: (params) => fsHandler.read(params),
      writeTextFile: (params) => fsHandler.write(params),
      createTerminal: (params) => terminals.create(params),
      terminalOutput: (params) => terminals.output(params),
      waitForTerminalExit: (params) => terminals.waitForExit(params),
      killTerminal: (params) => terminals.kill(params),
      releaseTerminal: (params) => terminals.release(params),
    },
    lost: () => approvals.cancelAll(),
    crashed: () => sessions.turnEnded("cancelled"),
    resume: () => sessions.resume(),
  });
  const sessions: SessionControl = new SessionControl(host.sessionHost(() => keys.ask(), metric), surface, supervisor, approvals);
  context.subscriptions.push({
    dispose: () => {
      approvals.cancelAll();
      supervisor.dispose();
      terminals.dispose();
      status.dispose();
      log.dispose();
    },
  });

  const provider = { provideTextDocumentContent: (uri: vscode.Uri) => diffs.provide(uri) };
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(ORIGINAL_SCHEME, provider),
    vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, provider),
    vscode.workspace.registerFileSystemProvider(REVIEW_SCHEME, host.reviewFileSystem(diffs), { isCaseSensitive: true }),
  );
  const refreshLenses = host.registerHunkReview(context.subscriptions, new HunkReview(diffs), log);
  const commands = host.commandHost(context.subscriptions, () => view.commanded());
  const pieces: Pieces = { surface, supervisor, sessions, approvals, editor, keys };
  const view = new ChatViewProvider(
    context.extensionUri,
    (message) => {
      handleViewMessage(commands, pieces, message).catch((error) => surface.reportError(error));
    },
    (event, restored) => {
      log.info(`chat view ${event} (${(performance.now() - started).toFixed(0)} ms after activation)`);
      metric(`view_${event}`, Date.now(), restored === undefined ? {} : { restored });
    },
  );
  surface.view = view;
  // The chat's first open: a native input takes typing while the webview is made.
  const focusChat = (): void => void vscode.commands.executeCommand("adkAcp.focus");
  const opening: OpeningInput = new OpeningInput(
    host.openingHost(
      {
        send: (text) => handleViewMessage(commands, pieces, { type: "prompt", text, mentions: [] }).catch((e) => surface.reportError(e)),
        moveDraft: (text, focus) => {
          surface.send({ type: "draft", text });
          if (focus) focusChat();
        },
        focusChat,
        note: (event) => {
          log.info(`the chat's opening input: ${event}`);
          metric(`opening_${event}`, Date.now());
        },
      },
      () => opening,
    ),
  );
  view.opening = opening;
  // The chat page's files, read once the activation is done (not when the user clicks).
  setTimeout(() => {
    try {
      view.loadAssets();
    } catch (error) {
      log.warn(`the chat view's files could not be read yet: ${String(error)}`);
    }
  }, 0);
  context.subscriptions.push(
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewType, view, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
  );
  registerCommands(commands, pieces);
  context.subscriptions.push(
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      void sessions.newChat("The workspace is trusted now: starting the agent.");
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration("adkAcp")) return;
      const { problems } = host.currentSettings();
      if (problems.length) {
        void vscode.window.showWarningMessage(`adk-acp's settings need a fix: ${problems.join(" ")}`, "Open Settings").then((choice) => {
          if (choice) void vscode.commands.executeCommand("workbench.action.openSettings", "adkAcp");
        });
      }
    }),
  );
  const took = performance.now() - started;
  log.info(`activated in ${took.toFixed(1)} ms`);
  metric("activation_ms", took);
}

export function deactivate(): void {
  // Everything is disposed with the context's subscriptions.
}
