// "Undo Last Agent Edit": every approved write of the agent is one entry (one undo
// stop), newest last; undoing one puts back the text the file had before it (or
// removes a file the agent created). The editor side is injected.

export interface AgentEdit {
  path: string;
  /** The text before the edit; null when the agent created the file. */
  before: string | null;
  /** The text the agent wrote. */
  after: string;
}

export interface EditorFiles {
  read(path: string): Promise<string | null>;
  write(path: string, content: string): Promise<void>;
  remove(path: string): Promise<void>;
}

export class EditHistory {
  private readonly edits: AgentEdit[] = [];

  constructor(private readonly limit = 50) {}

  record(edit: AgentEdit): void {
    this.edits.push(edit);
    if (this.edits.length > this.limit) this.edits.shift();
  }

  get size(): number {
    return this.edits.length;
  }

  peek(): AgentEdit | undefined {
    return this.edits[this.edits.length - 1];
  }

  /**
   * Undoes the newest edit. Refuses (returns a reason, keeps the entry) when the file was
   * changed since the agent wrote it, so nothing the user typed afterwards is lost.
   */
  async undo(files: EditorFiles): Promise<{ undone: AgentEdit } | { refused: string }> {
    const edit = this.peek();
    if (!edit) return { refused: "There is no agent edit to undo." };
    const now = await files.read(edit.path);
    if (now !== edit.after) {
      return { refused: `${edit.path} changed after the agent's edit; undo it in the editor instead (Ctrl+Z).` };
    }
    if (edit.before === null) await files.remove(edit.path);
    else await files.write(edit.path, edit.before);
    this.edits.pop();
    return { undone: edit };
  }
}
