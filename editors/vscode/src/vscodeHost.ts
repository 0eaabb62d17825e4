// The real VS Code side of each piece's host interface (the pieces themselves never
// import "vscode", so `node --test` runs them against fakes). Thin: each member is one
// VS Code API call or two.

import * as childProcess from "node:child_process";
import * as fs from "node:fs";
import * as vscode from "vscode";
import type { KeyHost } from "./apiKey";
import type { ApprovalsHost } from "./approvals";
import type { SurfaceHost } from "./chatSurface";
import type { CommandHost } from "./commands";
import { type DiffStore, REVIEW_SCHEME } from "./diffDocuments";
import type { EditorDocument, EditorHost } from "./editorIo";
import type { HunkReview } from "./hunkReview";
import type { Metric } from "./metrics";
import { PLACEHOLDER, READY_PROMPT, type OpeningHost, type OpeningInput } from "./openingInput";
import type { SessionHost } from "./sessions";
import { readSettings, type ReadSettings } from "./settings";
import type { SecretSettings, SecretSettingsHost } from "./settingsSecrets";
import { AgentProcess } from "./agentProcess";
import type { SupervisorHost } from "./supervisor";

/** The settings (checked); each problem is named, and its setting keeps the default. */
export function currentSettings(): ReadSettings {
  const config = vscode.workspace.getConfiguration("adkAcp");
  return readSettings((key) => config.get(key));
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

const folders = (): vscode.Uri[] => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri);
const openFile = (p: string): vscode.TextDocument | undefined =>
  vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === p);
const openSettings = (): void => void vscode.commands.executeCommand("workbench.action.openSettings", "adkAcp");
const setContext = (key: string, value: boolean): void => void vscode.commands.executeCommand("setContext", key, value);

export function surfaceHost(log: vscode.LogOutputChannel, status: vscode.StatusBarItem): SurfaceHost {
  return {
    log,
    showStatus: (text, tooltip) => {
      status.text = text;
      status.tooltip = tooltip;
    },
    setContext,
    showError: (message, actions) => vscode.window.showErrorMessage(message, ...actions),
    openSettings,
    manageTrust: () => void vscode.commands.executeCommand("workbench.trust.manage"),
  };
}

export function supervisorHost(keys: { get(): PromiseLike<string | undefined> }, secrets: SecretSettings, metric: Metric): SupervisorHost {
  return {
    isTrusted: () => vscode.workspace.isTrusted,
    settings: currentSettings,
    secretEnv: () => secrets.env(),
    secretsInSettings: (found) => void secrets.warn(found).then(undefined, (error) => vscode.window.showErrorMessage(`adk-acp: ${String(error)}`)),
    workspaceFolders: () => folders().map((u) => u.fsPath),
    cwd: () => folders().find((u) => u.scheme === "file")?.fsPath,
    apiKey: async () => keys.get(),
    env: process.env,
    isExecutable,
    launch: (options) => new AgentProcess({ ...options, spawn: (c, a, o) => childProcess.spawn(c, a, o) }),
    showError: (message, actions) => vscode.window.showErrorMessage(message, ...actions),
    showWarning: (message) => void vscode.window.showWarningMessage(message),
    metric,
    now: () => Date.now(),
    pause: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}

export function sessionHost(ask: () => Promise<boolean>, metric: Metric): SessionHost {
  return {
    folders,
    processCwd: () => process.cwd(),
    askForKey: ask,
    showInfo: (message) => void vscode.window.showInformationMessage(message),
    pickSession: (picks) => vscode.window.showQuickPick(picks, { title: "adk-acp: open an earlier chat", matchOnDetail: true }),
    metric,
    now: () => Date.now(),
  };
}

export function keyHost(secrets: vscode.SecretStorage): KeyHost {
  return {
    secretGet: (name) => secrets.get(name),
    secretStore: (name, value) => secrets.store(name, value),
    secretDelete: (name) => secrets.delete(name),
    input: (options) => vscode.window.showInputBox({ ...options, password: true, ignoreFocusOut: true }),
    askAllowed: () => currentSettings().settings.askForApiKey,
    showInfo: (message) => void vscode.window.showInformationMessage(message),
  };
}

const openDocument = (uri: { toString(): string }): vscode.TextDocument | undefined => {
  const target = uri.toString();
  return vscode.workspace.textDocuments.find((d) => d.uri.toString() === target);
};

export function secretSettingsHost(store: vscode.SecretStorage): SecretSettingsHost {
  return {
    secretGet: (name) => store.get(name),
    secretStore: (name, value) => store.store(name, value),
    removeFromEnvSetting: async (names) => {
      const config = vscode.workspace.getConfiguration("adkAcp");
      const found = config.inspect<Record<string, string>>("env");
      const scopes = [
        [found?.globalValue, vscode.ConfigurationTarget.Global],
        [found?.workspaceValue, vscode.ConfigurationTarget.Workspace],
        [found?.workspaceFolderValue, vscode.ConfigurationTarget.WorkspaceFolder],
      ] as const;
      for (const [value, target] of scopes) {
        if (!value || !names.some((n) => n in value)) continue;
        const kept = Object.fromEntries(Object.entries(value).filter(([n]) => !names.includes(n)));
        await config.update("env", Object.keys(kept).length ? kept : undefined, target);
      }
    },
    showWarning: (message, buttons) => vscode.window.showWarningMessage(message, ...buttons),
    showInfo: (message) => void vscode.window.showInformationMessage(message),
  };
}

export function approvalsHost(metric: Metric, refreshLenses: () => void): ApprovalsHost {
  return {
    openDiff: async (p) => {
      await vscode.commands.executeCommand("vscode.diff", p.original, p.proposed, p.title, { preview: false, preserveFocus: false });
      // The hunks' lenses asked for again once the editable side is shown (and a moment later,
      // when the workbench may have attached its model late).
      if (p.editable) {
        refreshLenses();
        setTimeout(refreshLenses, 1000);
      }
    },
    closeDiffTabs: async (proposed) => {
      const target = proposed.toString();
      // An edited proposed side is saved (into the review file system) first: closing a diff
      // editor whose side is dirty would keep that side open in a tab of its own.
      const edited = openDocument(proposed);
      if (edited?.isDirty) await edited.save().then(undefined, () => false);
      const tabs: vscode.Tab[] = [];
      for (const group of vscode.window.tabGroups.all) {
        for (const tab of group.tabs) {
          const input = tab.input;
          if (input instanceof vscode.TabInputTextDiff && input.modified.toString() === target) tabs.push(tab);
          else if (input instanceof vscode.TabInputText && input.uri.toString() === target) tabs.push(tab);
        }
      }
      if (tabs.length) await vscode.window.tabGroups.close(tabs, true);
    },
    setContext,
    showInfo: (message, buttons) => vscode.window.showInformationMessage(message, ...buttons),
    hideToasts: () => void vscode.commands.executeCommand("notifications.hideToasts").then(undefined, () => undefined),
    pickOption: (picks, title) => vscode.window.showQuickPick(picks, { title }),
    preload: (uri) => void vscode.workspace.openTextDocument(uri as vscode.Uri).then(undefined, () => undefined),
    documentText: (uri) => openDocument(uri)?.getText(),
    metric,
    now: () => Date.now(),
  };
}

const whole = (doc: vscode.TextDocument): vscode.Range => new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));

export function editorHost(): EditorHost {
  return {
    openDocument: openFile,
    loadDocument: (p) => vscode.workspace.openTextDocument(vscode.Uri.file(p)),
    exists: (p) => fs.existsSync(p),
    readDisk: (p) => fs.promises.readFile(p, "utf8"),
    replaceAll: async (p, content) => {
      const uri = vscode.Uri.file(p);
      const doc = openFile(p) ?? (await vscode.workspace.openTextDocument(uri));
      const edit = new vscode.WorkspaceEdit();
      edit.replace(uri, whole(doc), content);
      return vscode.workspace.applyEdit(edit);
    },
    create: (p, content) => {
      const uri = vscode.Uri.file(p);
      const edit = new vscode.WorkspaceEdit();
      edit.createFile(uri, { ignoreIfExists: true });
      edit.insert(uri, new vscode.Position(0, 0), content);
      return vscode.workspace.applyEdit(edit);
    },
    remove: (p) => {
      const edit = new vscode.WorkspaceEdit();
      edit.deleteFile(vscode.Uri.file(p), { ignoreIfNotExists: true });
      return vscode.workspace.applyEdit(edit);
    },
    show: (doc) => vscode.window.showTextDocument(doc as vscode.TextDocument, { preview: false, preserveFocus: true }),
    onDidSave: (listener: (doc: EditorDocument) => void) => vscode.workspace.onDidSaveTextDocument(listener),
    relative: (p) => vscode.workspace.asRelativePath(vscode.Uri.file(p)),
    reveal: async (p, line) => {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(p));
      const position = new vscode.Position(line, 0);
      await vscode.window.showTextDocument(doc, { selection: new vscode.Range(position, position), preview: true });
    },
    findFiles: async (glob, exclude, max) => (await vscode.workspace.findFiles(glob, exclude, max)).map((u) => u.fsPath),
    selection: () => {
      const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme === "file");
      if (!editor || editor.document.uri.scheme !== "file" || editor.selection.isEmpty) return null;
      const s = editor.selection;
      return { path: editor.document.uri.fsPath, start: s.start.line, end: s.end.line, text: editor.document.getText(s) };
    },
    showInfo: (message) => void vscode.window.showInformationMessage(message),
  };
}

export function commandHost(subscriptions: vscode.Disposable[], openingInput: () => boolean): CommandHost {
  return {
    openingInput,
    register: (id, run) => subscriptions.push(vscode.commands.registerCommand(id, run as (...args: unknown[]) => unknown)),
    // The view's focus command; preserveFocus opens the view without focusing it.
    // The context key says the opening input is open (set with its show too): a round trip.
    workbenchCaughtUp: () => vscode.commands.executeCommand("setContext", OPENING_CONTEXT, true),
    focusChat: (preserveFocus = false) => vscode.commands.executeCommand("adkAcp.chat.focus", { preserveFocus }),
    activeDocument: () => vscode.window.activeTextEditor?.document.uri,
    parseUri: (text) => (text.startsWith("/") ? vscode.Uri.file(text) : vscode.Uri.parse(text, true)),
  };
}

/** A context key: the chat's opening input is open. */
const OPENING_CONTEXT = "adkAcp.openingInput";

/** The native input of the chat's first open (openingInput.ts): a VS Code quick input box,
 * its events handed to the state machine `machine()`; the rest of the host is `actions`. */
export function openingHost(
  actions: Pick<OpeningHost, "send" | "moveDraft" | "focusChat" | "note">,
  machine: () => OpeningInput,
): OpeningHost {
  let box: vscode.InputBox | null = null;
  return {
    ...actions,
    enabled: () => currentSettings().settings.quickInputWhileOpening,
    after: (ms, run) => {
      const timer = setTimeout(run, ms);
      return () => clearTimeout(timer);
    },
    showInput: () => {
      const input = vscode.window.createInputBox();
      input.title = "adk-acp";
      input.placeholder = PLACEHOLDER;
      input.prompt = "Enter sends it to the chat; Escape moves it into the chat's input.";
      input.onDidAccept(() => machine().accepted());
      input.onDidHide(() => {
        void vscode.commands.executeCommand("setContext", OPENING_CONTEXT, false);
        machine().hidden();
        if (box === input) box = null;
        input.dispose();
      });
      box = input;
      input.show();
      void vscode.commands.executeCommand("setContext", OPENING_CONTEXT, true);
    },
    inputReady: () => {
      if (box) box.prompt = READY_PROMPT;
    },
    closeInput: () => box?.hide(),
    inputValue: () => box?.value ?? "",
  };
}

/** The editable proposed side of an edit under review (issue 36): an in-memory file
 * system over the DiffStore; a save keeps the user's version there until the answer. */
export function reviewFileSystem(diffs: DiffStore): vscode.FileSystemProvider {
  const changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  const times = new Map<string, number>();
  // A proposal answered and dropped: its document may still be saved or read once by the
  // workbench as its editor closes; that is taken quietly (the answer is given already).
  const known = (uri: vscode.Uri): void => {
    if (!diffs.has(uri) && !times.has(uri.toString())) throw vscode.FileSystemError.FileNotFound(uri);
  };
  const refuse = (uri: vscode.Uri): never => {
    throw vscode.FileSystemError.NoPermissions(uri);
  };
  return {
    onDidChangeFile: changed.event,
    watch: () => new vscode.Disposable(() => undefined),
    stat: (uri) => {
      known(uri);
      const mtime = times.get(uri.toString()) ?? Date.now();
      times.set(uri.toString(), mtime);
      return { type: vscode.FileType.File, ctime: mtime, mtime, size: Buffer.byteLength(diffs.provide(uri)) };
    },
    readDirectory: () => [],
    createDirectory: refuse,
    readFile: (uri) => {
      known(uri);
      return new TextEncoder().encode(diffs.provide(uri));
    },
    writeFile: (uri, content) => {
      if (!diffs.write(uri, new TextDecoder().decode(content)) && !times.has(uri.toString())) refuse(uri);
      times.set(uri.toString(), Math.max(Date.now(), (times.get(uri.toString()) ?? 0) + 1));
      changed.fire([{ type: vscode.FileChangeType.Changed, uri }]);
    },
    delete: refuse,
    rename: refuse,
  };
}

/** CodeLens "Accept" / "Reject" above each hunk of an editable proposed side (hunkReview.ts). */
export function registerHunkReview(subscriptions: vscode.Disposable[], review: HunkReview, log: vscode.LogOutputChannel): () => void {
  const changed = new vscode.EventEmitter<void>();
  subscriptions.push(
    changed,
    vscode.languages.registerCodeLensProvider(
      { scheme: REVIEW_SCHEME },
      {
        onDidChangeCodeLenses: changed.event,
        provideCodeLenses: (doc) => {
          const lenses = review.lenses(doc.uri, doc.getText());
          log.debug(`hunk review: ${lenses.length} hunks to decide in ${doc.uri.toString()}`);
          return lenses.flatMap((lens) => {
            const range = new vscode.Range(lens.line, 0, lens.line, 0);
            const args = [doc.uri.toString(), lens.key];
            return [
              new vscode.CodeLens(range, { title: "Accept", command: "adkAcp.acceptHunk", arguments: args }),
              new vscode.CodeLens(range, { title: "Reject", command: "adkAcp.rejectHunk", arguments: args }),
            ];
          });
        },
      },
    ),
    vscode.commands.registerCommand("adkAcp.acceptHunk", (uri: string, key: string) => {
      review.accept(vscode.Uri.parse(uri, true), key);
      changed.fire();
    }),
    vscode.commands.registerCommand("adkAcp.rejectHunk", async (uri: string, key: string) => {
      const target = vscode.Uri.parse(uri, true);
      const doc = openDocument(target) ?? (await vscode.workspace.openTextDocument(target));
      const text = review.reject(target, doc.getText(), key);
      if (text === undefined) return;
      const edit = new vscode.WorkspaceEdit();
      edit.replace(target, whole(doc), text);
      await vscode.workspace.applyEdit(edit);
    }),
  );
  return () => changed.fire();
}
