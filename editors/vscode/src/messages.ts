// Messages between the extension host and the chat webview.

import type { Op } from "./chatModel";

export type Mention =
  | { kind: "file"; path: string; label: string }
  | { kind: "selection"; path: string; label: string; startLine: number; endLine: number; text: string };

export type ToView =
  | { type: "ops"; ops: Op[] }
  | { type: "files"; requestId: number; files: { path: string; label: string }[]; selection: Mention | null }
  | { type: "mention"; mention: Mention }
  | { type: "turn"; running: boolean; stopReason?: string; lastAgentId?: string | null; sentAt?: number }
  | { type: "focus" };

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
