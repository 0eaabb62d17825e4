// Editor I/O: the agent's writes go through the editor (an undoable edit, the document
// shown and saved) and are recorded for "Undo Last Agent Edit"; files and the selection
// become @-mentions; the chat's links open a file at a line; the composer's @ search.
// The VS Code side is injected (EditorHost); paths are absolute file paths.

import type { ChatSurface } from "./chatSurface";
import type { EditHistory } from "./editHistory";
import type { Mention } from "./messages";

export interface EditorDocument {
  getText(): string;
  readonly isDirty: boolean;
  save(): PromiseLike<boolean>;
}

export interface Disposable {
  dispose(): void;
}

export interface EditorHost {
  /** The open document of this file (unsaved edits included), if one is open. */
  openDocument(filePath: string): EditorDocument | undefined;
  /** Opens (loads) the document of this file. */
  loadDocument(filePath: string): PromiseLike<EditorDocument>;
  exists(filePath: string): boolean;
  readDisk(filePath: string): Promise<string>;
  /** Replaces the file's whole text with one WorkspaceEdit; false when the editor refuses. */
  replaceAll(filePath: string, content: string): PromiseLike<boolean>;
  /** Creates the file with this text as one WorkspaceEdit; false when the editor refuses. */
  create(filePath: string, content: string): PromiseLike<boolean>;
  remove(filePath: string): PromiseLike<boolean>;
  /** Shows the document in an editor, without taking the focus. */
  show(document: EditorDocument): PromiseLike<unknown>;
  onDidSave(listener: (document: EditorDocument) => void): Disposable;
  /** A path as the workspace shows it (relative to its folder). */
  relative(filePath: string): string;
  /** Opens the file with the cursor at the start of this (0-based) line. */
  reveal(filePath: string, line: number): PromiseLike<unknown>;
  /** Files matching the glob (absolute paths), at most `max`. */
  findFiles(glob: string, exclude: string, max: number): PromiseLike<string[]>;
  /** The selection of the active (else a visible) file editor; lines 0-based; null when empty. */
  selection(): { path: string; start: number; end: number; text: string } | null;
  showInfo(message: string): void;
}

export class EditorIo {
  constructor(
    private readonly host: EditorHost,
    private readonly surface: ChatSurface,
    private readonly edits: EditHistory,
    private readonly saveWaitMs = 10_000,
  ) {}

  /**
   * Saves `doc`. save() is false when the document is not dirty (auto save was first) or
   * when another save of it is under way (auto save on a focus change): then its end counts.
   */
  async save(doc: EditorDocument): Promise<boolean> {
    if ((await doc.save()) || !doc.isDirty) return true;
    return new Promise<boolean>((resolve) => {
      const done = (saved: boolean): void => {
        clearTimeout(timer);
        subscription.dispose();
        resolve(saved);
      };
      const subscription = this.host.onDidSave((saved) => {
        if (saved === doc && !doc.isDirty) done(true);
      });
      const timer = setTimeout(() => done(!doc.isDirty), this.saveWaitMs);
    });
  }

  /** fs/write_text_file: an edit through the editor, shown, saved and recorded for undo. */
  async writeThroughEditor(filePath: string, content: string): Promise<void> {
    const host = this.host;
    const open = host.openDocument(filePath);
    let before: string | null = null;
    let applied: boolean;
    if (open || host.exists(filePath)) {
      before = (open ?? (await host.loadDocument(filePath))).getText();
      applied = await host.replaceAll(filePath, content);
    } else {
      applied = await host.create(filePath, content);
    }
    if (!applied) throw new Error(`the editor refused the edit of ${filePath}`);
    const doc = await host.loadDocument(filePath);
    await host.show(doc);
    if (!(await this.save(doc))) throw new Error(`the editor could not save ${filePath}`);
    this.edits.record({ path: filePath, before, after: doc.getText() });
  }

  /** "Undo Last Agent Edit": one approved edit of the agent per call, newest first. */
  async undoLastEdit(): Promise<void> {
    const host = this.host;
    const result = await this.edits.undo({
      read: async (p) => {
        const open = host.openDocument(p);
        if (open) return open.getText();
        return host.exists(p) ? host.readDisk(p) : null;
      },
      write: async (p, content) => {
        const doc = await host.loadDocument(p);
        if (!(await host.replaceAll(p, content))) throw new Error(`the editor refused to undo the edit of ${p}`);
        if (!(await this.save(doc))) throw new Error(`the editor could not save ${p}`);
      },
      remove: async (p) => {
        await host.remove(p);
      },
    });
    if ("refused" in result) {
      host.showInfo(`adk-acp: ${result.refused}`);
      return;
    }
    const what = result.undone.before === null ? "removed" : "restored";
    this.surface.notice(`Undid the agent's edit of ${host.relative(result.undone.path)} (${what}).`);
  }

  /** Files (explorer, editor tab, drag and drop) as @-mentions in the chat's composer. A file
   * dragged in under VS Code Remote or in code-server is `vscode-remote://<authority><path>`:
   * this extension runs on that side (extensionKind workspace), where it is the file <path>. */
  fileMentions(uris: readonly { scheme: string; fsPath: string; path?: string }[]): Mention[] {
    const mentions: Mention[] = [];
    for (const u of uris) {
      const path = u.scheme === "file" ? u.fsPath : u.scheme === "vscode-remote" ? u.path : undefined;
      if (path) mentions.push({ kind: "file", path, label: this.host.relative(path) });
    }
    return mentions;
  }

  async openLocation(filePath: string, line?: number | null): Promise<void> {
    await this.host.reveal(filePath, Math.max(0, (line ?? 1) - 1));
  }

  /** The composer's @ completion: files whose path contains the query, shortest first. */
  async searchFiles(query: string): Promise<{ path: string; label: string }[]> {
    const safe = query.replace(/[[\]{}*?!]/g, "");
    const glob = safe ? `**/*${safe}*` : "**/*";
    const found = await this.host.findFiles(glob, "**/{node_modules,.git,.venv}/**", 30);
    return found
      .map((p) => ({ path: p, label: this.host.relative(p) }))
      .sort((a, b) => a.label.length - b.label.length)
      .slice(0, 15);
  }

  /** The editor's selection as a mention (path:first-last line), or null when nothing is selected. */
  currentSelection(): Mention | null {
    const selection = this.host.selection();
    if (!selection) return null;
    const startLine = selection.start + 1;
    const endLine = selection.end + 1;
    return {
      kind: "selection",
      path: selection.path,
      label: `${this.host.relative(selection.path)}:${startLine}-${endLine}`,
      startLine,
      endLine,
      text: selection.text,
    };
  }
}
