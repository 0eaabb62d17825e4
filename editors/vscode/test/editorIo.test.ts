// Editor I/O (writes through the editor, undo, mentions, the @ search) on a fake editor.

import assert from "node:assert/strict";
import { test } from "node:test";
import { EditHistory } from "../src/editHistory";
import { EditorIo, type EditorDocument, type EditorHost } from "../src/editorIo";
import { fakeSurface, notices } from "./fakes";

class Doc implements EditorDocument {
  isDirty = false;
  /** What save() answers; "later": another save is under way and ends after it. */
  saving: "saved" | "later" | "never" = "saved";
  constructor(
    readonly editor: FakeEditor,
    readonly path: string,
    public text: string,
  ) {}
  getText(): string {
    return this.text;
  }
  async save(): Promise<boolean> {
    if (this.saving === "saved") {
      this.flush();
      return true;
    }
    if (this.saving === "later") setTimeout(() => this.flush(), 5);
    return false;
  }
  flush(): void {
    this.isDirty = false;
    this.editor.disk.set(this.path, this.text);
    for (const listener of this.editor.saveListeners) listener(this);
  }
}

class FakeEditor implements EditorHost {
  disk = new Map<string, string>();
  docs = new Map<string, Doc>();
  open = new Set<string>();
  shown: string[] = [];
  revealed: [string, number][] = [];
  info: string[] = [];
  refuse = false;
  saveListeners = new Set<(d: EditorDocument) => void>();
  selected: { path: string; start: number; end: number; text: string } | null = null;
  files: string[] = [];
  globs: string[] = [];

  doc(p: string): Doc {
    let doc = this.docs.get(p);
    if (!doc) {
      doc = new Doc(this, p, this.disk.get(p) ?? "");
      this.docs.set(p, doc);
    }
    return doc;
  }
  openDocument(p: string): EditorDocument | undefined {
    return this.open.has(p) ? this.doc(p) : undefined;
  }
  async loadDocument(p: string): Promise<EditorDocument> {
    this.open.add(p);
    return this.doc(p);
  }
  exists(p: string): boolean {
    return this.disk.has(p);
  }
  async readDisk(p: string): Promise<string> {
    return this.disk.get(p)!;
  }
  async replaceAll(p: string, content: string): Promise<boolean> {
    if (this.refuse) return false;
    const doc = this.doc(p);
    doc.text = content;
    doc.isDirty = true;
    return true;
  }
  async create(p: string, content: string): Promise<boolean> {
    this.disk.set(p, "");
    return this.replaceAll(p, content);
  }
  async remove(p: string): Promise<boolean> {
    this.disk.delete(p);
    this.docs.delete(p);
    this.open.delete(p);
    return true;
  }
  async show(doc: EditorDocument): Promise<void> {
    this.shown.push((doc as Doc).path);
  }
  onDidSave(listener: (d: EditorDocument) => void): { dispose(): void } {
    this.saveListeners.add(listener);
    return { dispose: () => this.saveListeners.delete(listener) };
  }
  relative(p: string): string {
    return p.startsWith("/w/") ? p.slice(3) : p;
  }
  async reveal(p: string, line: number): Promise<void> {
    this.revealed.push([p, line]);
  }
  async findFiles(glob: string): Promise<string[]> {
    this.globs.push(glob);
    return this.files;
  }
  selection(): { path: string; start: number; end: number; text: string } | null {
    return this.selected;
  }
  showInfo(message: string): void {
    this.info.push(message);
  }
}

function rig(): { io: EditorIo; editor: FakeEditor; fake: ReturnType<typeof fakeSurface>; history: EditHistory } {
  const editor = new FakeEditor();
  const fake = fakeSurface();
  const history = new EditHistory();
  return { io: new EditorIo(editor, fake.surface, history, 2000), editor, fake, history };
}

test("a write goes through the editor (unsaved text counts as before), is shown, saved and undoable", async () => {
  const { io, editor, fake, history } = rig();
  editor.disk.set("/w/a.txt", "disk\n");
  editor.open.add("/w/a.txt");
  editor.doc("/w/a.txt").text = "typed, unsaved\n";
  await io.writeThroughEditor("/w/a.txt", "agent\n");
  assert.equal(editor.disk.get("/w/a.txt"), "agent\n");
  assert.deepEqual(editor.shown, ["/w/a.txt"]);
  assert.deepEqual(history.peek(), { path: "/w/a.txt", before: "typed, unsaved\n", after: "agent\n" });
  await io.undoLastEdit();
  assert.equal(editor.disk.get("/w/a.txt"), "typed, unsaved\n");
  assert.deepEqual(notices(fake.surface), ["Undid the agent's edit of a.txt (restored)."]);
  await io.undoLastEdit();
  assert.deepEqual(editor.info, ["adk-acp: There is no agent edit to undo."]);
});

test("a new file is created; undoing it removes it; a file changed since is not undone", async () => {
  const { io, editor, fake } = rig();
  await io.writeThroughEditor("/w/new.txt", "fresh\n");
  assert.equal(editor.disk.get("/w/new.txt"), "fresh\n");
  await io.undoLastEdit();
  assert.equal(editor.disk.has("/w/new.txt"), false);
  assert.deepEqual(notices(fake.surface), ["Undid the agent's edit of new.txt (removed)."]);
  await io.writeThroughEditor("/w/b.txt", "agent\n");
  editor.doc("/w/b.txt").text = "the user typed after\n";
  await io.undoLastEdit();
  assert.match(editor.info[0]!, /b\.txt changed after the agent's edit/);
  assert.equal(editor.doc("/w/b.txt").text, "the user typed after\n");
});

test("a save already under way counts when it ends; a refused edit or a failed save is an error", async () => {
  const { io, editor } = rig();
  editor.doc("/w/c.txt").saving = "later";
  await io.writeThroughEditor("/w/c.txt", "c\n");
  assert.equal(editor.disk.get("/w/c.txt"), "c\n");
  assert.equal(editor.saveListeners.size, 0, "the save listener is disposed");
  editor.refuse = true;
  await assert.rejects(io.writeThroughEditor("/w/d.txt", "d\n"), /the editor refused the edit of \/w\/d\.txt/);
  editor.refuse = false;
  const quick = new EditorIo(editor, rig().fake.surface, new EditHistory(), 10);
  editor.doc("/w/e.txt").saving = "never";
  await assert.rejects(quick.writeThroughEditor("/w/e.txt", "e\n"), /could not save \/w\/e\.txt/);
});

test("mentions: files (other schemes skipped) and the selection, 1-based lines", () => {
  const { io, editor } = rig();
  assert.deepEqual(io.fileMentions([{ scheme: "file", fsPath: "/w/src/x.ts" }, { scheme: "untitled", fsPath: "Untitled-1" }]), [
    { kind: "file", path: "/w/src/x.ts", label: "src/x.ts" },
  ]);
  // Dragged from the explorer under VS Code Remote or in code-server: the remote side's file.
  assert.deepEqual(io.fileMentions([{ scheme: "vscode-remote", fsPath: "/w/y.ts", path: "/w/y.ts" }]), [
    { kind: "file", path: "/w/y.ts", label: "y.ts" },
  ]);
  assert.equal(io.currentSelection(), null);
  editor.selected = { path: "/w/src/x.ts", start: 2, end: 4, text: "code" };
  assert.deepEqual(io.currentSelection(), {
    kind: "selection",
    path: "/w/src/x.ts",
    label: "src/x.ts:3-5",
    startLine: 3,
    endLine: 5,
    text: "code",
  });
});

test("the @ search: glob characters dropped, shortest paths first, at most 15; links open at their line", async () => {
  const { io, editor } = rig();
  editor.files = Array.from({ length: 20 }, (_, i) => `/w/${"d/".repeat(i % 5)}f${i}.ts`);
  const found = await io.searchFiles("f*{1}");
  assert.deepEqual(editor.globs, ["**/*f1*"]);
  assert.equal(found.length, 15);
  assert.ok(found.every((f, i) => i === 0 || found[i - 1]!.label.length <= f.label.length));
  await io.searchFiles("");
  assert.equal(editor.globs[1], "**/*");
  await io.openLocation("/w/a.txt", 10);
  await io.openLocation("/w/a.txt", null);
  assert.deepEqual(editor.revealed, [["/w/a.txt", 9], ["/w/a.txt", 0]]);
});
