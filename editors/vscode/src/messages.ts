// Messages between the extension host and the chat webview, and the webview script's
// own shapes: the host (chatView.ts, commands.ts) and the webview (media/*.js, checked
// with `// @ts-check` through src/webview.d.ts) both use these types.

import type { HeaderState, Item, Op } from "./chatItems";

export type Mention =
  | { kind: "file"; path: string; label: string }
  | { kind: "selection"; path: string; label: string; startLine: number; endLine: number; text: string };

export type ToView =
  | { type: "ops"; ops: Op[] }
  | { type: "files"; requestId: number; files: { path: string; label: string }[]; selection: Mention | null }
  | { type: "mention"; mention: Mention }
  | { type: "turn"; running: boolean; stopReason?: string; lastAgentId?: string | null; sentAt?: number }
  | { type: "focus" }
  /** Text typed into the native input while the chat opened (openingInput.ts): put before
   * whatever the chat's input holds, the caret at the end. */
  | { type: "draft"; text: string };

export type FromView =
  | { type: "ready" }
  | { type: "prompt"; text: string; mentions: Mention[] }
  | { type: "cancel" }
  | { type: "newChat" }
  | { type: "history" }
  | { type: "config"; id: string; value: string }
  | { type: "open"; path: string; line?: number | null }
  | { type: "permission"; key: string; optionId: string }
  | { type: "searchFiles"; requestId: number; query: string }
  | { type: "dropped"; uris: string[] }
  | { type: "rendered"; id: string; length: number; at: number; receivedAt?: number; sentAt?: number };

/** The host as the webview's script sees it (`acquireVsCodeApi()`): it only sends FromView. */
export interface WebviewApi {
  postMessage(message: FromView): void;
}

/** One transcript item in the webview, with what the view keeps about its drawing. */
export interface TranscriptEntry {
  item: Item;
  el?: HTMLElement;
  /** When the item's text was last drawn, and how long it was then. */
  drawnAt?: number;
  drawnLength?: number;
}

/** What media/transcript.js tells the view to draw. */
export interface TranscriptView {
  reset(): void;
  created(entry: TranscriptEntry): void;
  changed(entry: TranscriptEntry): void;
  appended(entry: TranscriptEntry): void;
  removed(entry: TranscriptEntry): void;
  state(state: Partial<HeaderState>): void;
}

/** media/transcript.js: the host's operations folded into items, in order. */
export interface Transcript {
  apply(ops: Op[]): void;
  get(id: string): TranscriptEntry | undefined;
  items(): Item[];
}

export interface TranscriptApi {
  createTranscript(view: TranscriptView): Transcript;
}

/** media/markdown.js: the chat's escaping Markdown renderer. */
export interface MarkdownApi {
  render(markdown: string): string;
  escapeHtml(text: string): string;
}
