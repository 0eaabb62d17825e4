// fs/read_text_file and fs/write_text_file answered by the editor: reads see unsaved
// buffers, writes go through the editor (an undoable WorkspaceEdit, the file opened
// and saved). The VS Code side is injected so this runs in plain Node too.

import type * as acp from "@agentclientprotocol/sdk/unstable";
import * as path from "node:path";

export interface EditorFiles {
  /** The text of an open document for this absolute path (unsaved edits included), if one is open. */
  openText(filePath: string): string | undefined;
  readDisk(filePath: string): Promise<string>;
  /** Applies the new content as a WorkspaceEdit (creating the file if needed), opens and saves it. */
  writeThroughEditor(filePath: string, content: string): Promise<void>;
}

/** line is 1-based; limit counts lines. */
export function sliceLines(text: string, line?: number | null, limit?: number | null): string {
  if ((line == null || line <= 1) && limit == null) return text;
  const lines = text.split("\n");
  const start = Math.max(0, (line ?? 1) - 1);
  const end = limit == null ? lines.length : Math.min(lines.length, start + Math.max(0, limit));
  const picked = lines.slice(start, end);
  let out = picked.join("\n");
  // Keep the newline that ended the last picked line, if the text had one there.
  if (end < lines.length) out += "\n";
  return out;
}

export class FsHandler {
  constructor(private readonly files: EditorFiles) {}

  private check(filePath: string): void {
    if (!path.isAbsolute(filePath)) throw new Error(`the path must be absolute: ${filePath}`);
  }

  async read(params: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse> {
    this.check(params.path);
    const open = this.files.openText(params.path);
    const text = open ?? (await this.files.readDisk(params.path));
    return { content: sliceLines(text, params.line, params.limit) };
  }

  async write(params: acp.WriteTextFileRequest): Promise<acp.WriteTextFileResponse> {
    this.check(params.path);
    await this.files.writeThroughEditor(params.path, params.content);
    return {};
  }
}
