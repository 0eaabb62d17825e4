// The extension's commands (palette, menus, keys) and the chat webview's messages,
// routed to the pieces that do the work. The VS Code side is injected (CommandHost).

import type { ApiKeyStore } from "./apiKey";
import type { Approvals } from "./approvals";
import type { ChatSurface } from "./chatSurface";
import type { EditorIo } from "./editorIo";
import type { FromView, Mention } from "./messages";
import type { SessionControl } from "./sessions";
import type { AgentSupervisor } from "./supervisor";

export interface FileUri {
  scheme: string;
  fsPath: string;
  path?: string;
}

export interface CommandHost {
  register(id: string, run: (...args: never[]) => unknown): void;
  /** Reveals the chat view; with `preserveFocus` the focus stays where it is (the
   * opening input has it: a focused view pane would close it). */
  focusChat(preserveFocus?: boolean): PromiseLike<unknown>;
  /** The user asked for the chat (our own command): on its first open in the page the
   * opening input shows at once (openingInput.ts); true when that input has the typing. */
  openingInput(): boolean;
  /** Resolves once the workbench has handled everything sent to it so far (a round trip). */
  workbenchCaughtUp(): PromiseLike<unknown>;
  /** The document of the active editor. */
  activeDocument(): FileUri | undefined;
  /** A dropped URI (or absolute path); throws when it is not one. */
  parseUri(text: string): FileUri;
}

export interface Pieces {
  surface: ChatSurface;
  supervisor: AgentSupervisor;
  sessions: SessionControl;
  approvals: Approvals;
  editor: EditorIo;
  keys: ApiKeyStore;
}

/** Mentions into the chat's composer (the chat is revealed first). */
async function mention(host: CommandHost, surface: ChatSurface, mentions: Mention[]): Promise<void> {
  if (!mentions.length) return;
  await host.focusChat();
  for (const m of mentions) surface.send({ type: "mention", mention: m });
}

export function registerCommands(host: CommandHost, p: Pieces): void {
  const { surface, supervisor, sessions, approvals, editor, keys } = p;
  const command = (id: string, run: (...args: never[]) => unknown): void => host.register(id, run);
  command("adkAcp.newChat", () => sessions.newChat());
  command("adkAcp.history", () => sessions.history());
  command("adkAcp.cancel", () => sessions.cancel());
  command("adkAcp.restart", () => supervisor.restart());
  command("adkAcp.showLog", () => surface.log.show());
  // The key and the status bar: the extension hears of the user's intent at once, so on
  // the chat's first open its opening input shows before the view is even revealed. A
  // mention (Add to Chat) goes to the chat's composer instead: no opening input there.
  command("adkAcp.focus", async () => {
    const opening = host.openingInput();
    // The workbench draws the input before it lays out the chat's view (that takes the
    // page's main thread for a while, the input's first paint and keys behind it).
    if (opening) await host.workbenchCaughtUp();
    await host.focusChat(opening);
    // The webview's input takes the focus only when the opening input does not hold it.
    if (!opening) surface.send({ type: "focus" });
  });
  command("adkAcp.setApiKey", async () => {
    if (await keys.set()) await supervisor.restart();
  });
  command("adkAcp.clearApiKey", () => keys.forget());
  command("adkAcp.mentionSelection", async () => {
    const selection = editor.currentSelection();
    if (selection) await mention(host, surface, [selection]);
  });
  command("adkAcp.undoLastEdit", () => editor.undoLastEdit());
  // From the editor's context menu (uri: its file), the explorer (uris: every selected
  // file) or the palette (no uri: the selection, else the active file).
  command("adkAcp.addToChat", async (uri?: FileUri, uris?: FileUri[]) => {
    const selection = uri === undefined ? editor.currentSelection() : null;
    const active = host.activeDocument();
    const targets = uris?.length ? uris : uri ? [uri] : active ? [active] : [];
    await mention(host, surface, selection ? [selection] : editor.fileMentions(targets));
  });
  command("adkAcp.approve", () => approvals.answerFromEditor(["allow_once", "allow_always"]));
  command("adkAcp.reject", () => approvals.answerFromEditor(["reject_once", "reject_always"]));
  command("adkAcp.chooseOption", () => approvals.chooseOption());
}

/** A message of the chat webview. */
export async function handleViewMessage(host: CommandHost, p: Pieces, message: FromView): Promise<void> {
  const { surface, sessions, approvals, editor } = p;
  switch (message.type) {
    case "ready":
      surface.send({ type: "ops", ops: surface.model.snapshot() });
      surface.send({ type: "turn", running: sessions.running });
      if (!sessions.session) sessions.ensureSession().catch((error) => surface.reportError(error));
      return;
    case "prompt":
      return sessions.prompt(message.text, message.mentions);
    case "cancel":
      return sessions.cancel();
    case "newChat":
      return sessions.newChat();
    case "history":
      return sessions.history();
    case "config":
      return sessions.setConfig(message.id, message.value);
    case "open":
      return editor.openLocation(message.path, message.line).catch((e) => surface.reportError(e));
    case "permission":
      approvals.answer(message.key, message.optionId);
      return;
    case "searchFiles":
      surface.send({
        type: "files",
        requestId: message.requestId,
        files: await editor.searchFiles(message.query),
        selection: editor.currentSelection(),
      });
      return;
    case "dropped": {
      const uris: FileUri[] = [];
      for (const text of message.uris) {
        try {
          uris.push(host.parseUri(text));
        } catch {
          surface.log.warn(`dropped something that is not a file: ${text}`);
        }
      }
      for (const m of editor.fileMentions(uris)) surface.send({ type: "mention", mention: m });
      return;
    }
    case "rendered":
      sessions.rendered(message.id, message.length, message.at, message.receivedAt, message.sentAt);
      return;
  }
}
