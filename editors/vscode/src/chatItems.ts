// The transcript's vocabulary, shared by the host (chatModel.ts) and the webview
// (through messages.ts and webview.d.ts): the items, the header state, the operations
// the webview follows; and the pure helpers that turn ACP content into them.

import type * as acp from "@agentclientprotocol/sdk/unstable";

export type ItemKind = "user" | "agent" | "thought" | "tool" | "plan" | "notice" | "permission" | "compaction" | "subagent";

/** What every item has: its id, and the subagent block it is drawn in (none: the chat itself). */
interface Placed {
  id: string;
  /** The id of the subagent item whose block holds this item. */
  parent?: string;
}

export interface Location {
  path: string;
  line?: number | null;
}

export interface ToolItem extends Placed {
  kind: "tool";
  title: string;
  toolKind: string;
  status: string;
  locations: Location[];
  diffs: { path: string; added: number; removed: number; isNew: boolean }[];
  text: string;
  terminalIds: string[];
}

export interface TextItem extends Placed {
  kind: "user" | "agent" | "thought" | "notice";
  text: string;
  level?: string;
  /** A notice of this client (crash, restart, a turn's limit), not replayed by the agent. */
  local?: boolean;
}

export interface PlanItem extends Placed {
  kind: "plan";
  entries: { content: string; priority: string; status: string }[];
  /** A plan operation's plan (`plan_update`): its id, and its Markdown or file when it is one. */
  planId?: string;
  markdown?: string;
  uri?: string;
}

/** A context compaction (`compaction_update`, `compaction_summary_chunk`); `text` is its summary. */
export interface CompactionItem extends Placed {
  kind: "compaction";
  status: string;
  text: string;
  error?: string | null;
}

/** A subagent session (`subagent_update`): its block holds the subagent's own items. */
export interface SubagentItem extends Placed {
  kind: "subagent";
  sessionId: string;
  title: string | null;
  description: string | null;
  /** running, idle, requires_action, unknown; null when not reported. */
  state: string | null;
  stopReason?: string | null;
}

export interface PermissionItem extends Placed {
  kind: "permission";
  title: string;
  detail: string;
  options: { optionId: string; name: string; kind: string }[];
  answered?: string;
  /** Allowed with the user's own changes to the proposed edit. */
  modified?: boolean;
}

export type Item = TextItem | ToolItem | PlanItem | PermissionItem | CompactionItem | SubagentItem;

export interface ConfigSelect {
  id: string;
  name: string;
  category: string;
  currentValue: string;
  options: { value: string; name: string; description?: string }[];
}

export interface HeaderState {
  configOptions: ConfigSelect[];
  commands: { name: string; description: string; hint?: string }[];
  usage: { used: number; size: number; cost?: string } | null;
  title: string | null;
  busy: boolean;
  status: "idle" | "thinking" | "waiting for approval" | "starting" | "stopped";
}

export type Op =
  | { op: "upsert"; item: Item }
  | { op: "append"; id: string; text: string }
  | { op: "remove"; id: string }
  | { op: "state"; state: Partial<HeaderState> }
  | { op: "reset" };

/** The agent's own `_meta` key (acp_server/updates.py `META_KEY`). */
export const META_KEY = "adkAcp";

export function agentMeta(update: { _meta?: { [key: string]: unknown } | null }): Record<string, unknown> | null {
  const meta = update._meta?.[META_KEY];
  return meta && typeof meta === "object" ? (meta as Record<string, unknown>) : null;
}

export function blockText(block: acp.ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "resource_link":
      return `[@${block.name}](${block.uri})`;
    case "resource":
      return "text" in block.resource ? block.resource.text : `(${block.resource.uri})`;
    case "image":
      return "(image)";
    case "audio":
      return "(audio)";
    default:
      return "";
  }
}

function countLines(text: string | null | undefined): number {
  if (!text) return 0;
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

/** Lines added and removed between two texts (a multiset comparison; cheap, good for a badge). */
export function diffStat(oldText: string | null | undefined, newText: string): { added: number; removed: number } {
  if (oldText == null) return { added: countLines(newText), removed: 0 };
  const before = new Map<string, number>();
  for (const line of oldText.split("\n")) before.set(line, (before.get(line) ?? 0) + 1);
  let added = 0;
  for (const line of newText.split("\n")) {
    const n = before.get(line) ?? 0;
    if (n > 0) before.set(line, n - 1);
    else added += 1;
  }
  let removed = 0;
  for (const n of before.values()) removed += n;
  return { added, removed };
}

export function configSelects(options: readonly acp.SessionConfigOption[] | null | undefined): ConfigSelect[] {
  const out: ConfigSelect[] = [];
  for (const option of options ?? []) {
    if (option.type !== "select") continue;
    const flat: ConfigSelect["options"] = [];
    for (const entry of option.options) {
      if ("group" in entry) {
        for (const o of entry.options) flat.push({ value: o.value, name: o.name, description: o.description ?? undefined });
      } else {
        flat.push({ value: entry.value, name: entry.name, description: entry.description ?? undefined });
      }
    }
    out.push({
      id: option.id,
      name: option.name,
      category: option.category ?? "other",
      currentValue: option.currentValue,
      options: flat,
    });
  }
  return out;
}

/** What an update of the shown session changes in the chat's header (commands, config
 * options, mode, title, usage); null for an update that is not about the header. */
export function headerChange(update: acp.SessionUpdate, state: HeaderState): Partial<HeaderState> | null {
  switch (update.sessionUpdate) {
    case "available_commands_update":
      return {
        commands: update.availableCommands.map((c) => ({
          name: c.name,
          description: c.description,
          hint: c.input && "hint" in c.input ? c.input.hint : undefined,
        })),
      };
    case "config_option_update":
      return { configOptions: configSelects(update.configOptions) };
    case "current_mode_update":
      return { configOptions: state.configOptions.map((o) => (o.category === "mode" ? { ...o, currentValue: update.currentModeId } : o)) };
    case "session_info_update":
      return update.title !== undefined ? { title: update.title ?? null } : null;
    case "usage_update": {
      const cost = update.cost ? `${update.cost.amount.toFixed(4)} ${update.cost.currency}` : undefined;
      return { usage: { used: update.used, size: update.size, cost } };
    }
    default:
      return null;
  }
}
