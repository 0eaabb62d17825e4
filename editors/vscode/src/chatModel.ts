// The chat transcript as the webview shows it, built from ACP session updates.
// `apply` folds one update into the model and returns the operations the webview
// needs to follow (upsert an item, append streamed text, change the header state);
// the webview never sees raw protocol messages. An operation carries a copy of its
// item as it is now, never the live object: operations may wait (batched) before
// they cross to the webview, and the appends that follow must not be in them already.

import type * as acp from "@agentclientprotocol/sdk";
import {
  agentMeta,
  blockText,
  configSelects,
  diffStat,
  type HeaderState,
  type Item,
  type Op,
  type PermissionItem,
  type PlanItem,
  type TextItem,
  type ToolItem,
} from "./chatItems";
import { describeToolCall } from "./permissions";

export { configSelects, diffStat, META_KEY } from "./chatItems";
export type { ConfigSelect, HeaderState, Item, ItemKind, Location, Op, PermissionItem, PlanItem, TextItem, ToolItem } from "./chatItems";

interface ReplayedPermission {
  title?: unknown;
  options?: { optionId?: unknown; name?: unknown; kind?: unknown }[];
  answer?: unknown;
}

const upsert = (item: Item): Op => ({ op: "upsert", item: structuredClone(item) });

let counter = 0;
const nextId = (prefix: string): string => `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`;

export class ChatModel {
  readonly items: Item[] = [];
  private readonly byId = new Map<string, Item>();
  private streaming: { kind: "agent" | "thought" | "user"; id: string; messageId?: string } | null = null;
  state: HeaderState = {
    configOptions: [],
    commands: [],
    usage: null,
    title: null,
    busy: false,
    status: "idle",
  };

  reset(): Op[] {
    this.items.length = 0;
    this.byId.clear();
    this.streaming = null;
    this.state = { ...this.state, usage: null, title: null, busy: false, status: "idle" };
    return [{ op: "reset" }, { op: "state", state: this.state }];
  }

  /** Everything, for a webview that (re)loads. */
  snapshot(): Op[] {
    return [{ op: "reset" }, { op: "state", state: { ...this.state } }, ...this.items.map(upsert)];
  }

  /**
   * This client's own notices (crash, restart, limits) of `earlier`, a model of the same
   * session before it was reloaded, put back where they were: after as many agent-side
   * items as preceded them then. The agent does not record them, so its replay lacks them.
   */
  keepLocalNotices(earlier: ChatModel): void {
    let seen = 0;
    const placed: { after: number; item: TextItem }[] = [];
    for (const item of earlier.items) {
      if (item.kind === "notice" && item.local) placed.push({ after: seen, item: { ...item } });
      else seen += 1;
    }
    for (const { after, item } of placed.reverse()) {
      let index = 0;
      for (let remote = 0; index < this.items.length && remote < after; index++) {
        const here = this.items[index]!;
        if (!(here.kind === "notice" && here.local)) remote += 1;
      }
      this.items.splice(index, 0, item);
      this.byId.set(item.id, item);
    }
    this.streaming = null;
  }

  setState(state: Partial<HeaderState>): Op[] {
    this.state = { ...this.state, ...state };
    return [{ op: "state", state }];
  }

  /** The user's own prompt, shown at once (the agent does not echo it). */
  addUser(text: string): Op[] {
    this.streaming = null;
    return [upsert(this.put({ kind: "user", id: nextId("user"), text }))];
  }

  /** A notice; `local` ones are this client's (see keepLocalNotices), others the agent's. */
  addNotice(text: string, level = "info", local = true): Op[] {
    this.streaming = null;
    return [upsert(this.put({ kind: "notice", id: nextId("notice"), text, level, ...(local ? { local } : {}) }))];
  }

  addPermission(item: Omit<PermissionItem, "kind">): Op[] {
    this.streaming = null;
    return [upsert(this.put({ kind: "permission", ...item }))];
  }

  answerPermission(id: string, answer: string): Op[] {
    const item = this.byId.get(id);
    if (!item || item.kind !== "permission") return [];
    item.answered = answer;
    return [upsert(item)];
  }

  get(id: string): Item | undefined {
    return this.byId.get(id);
  }

  private put<T extends Item>(item: T): T {
    const existing = this.byId.get(item.id);
    if (existing) {
      Object.assign(existing, item);
      return existing as T;
    }
    this.items.push(item);
    this.byId.set(item.id, item);
    return item;
  }

  private chunk(kind: "agent" | "thought" | "user", update: acp.ContentChunk): Op[] {
    const text = blockText(update.content);
    const notice = kind === "agent" ? agentMeta(update)?.["notice"] : undefined;
    if (notice && typeof notice === "object") {
      const { level, text: noticeText } = notice as { level?: unknown; text?: unknown };
      return this.addNotice(typeof noticeText === "string" ? noticeText : text.trim(), typeof level === "string" ? level : "info", false);
    }
    const messageId = update.messageId ?? undefined;
    const current = this.streaming;
    if (current && current.kind === kind && (messageId === undefined || current.messageId === messageId)) {
      const item = this.byId.get(current.id) as TextItem;
      item.text += text;
      return [{ op: "append", id: item.id, text }];
    }
    const item = this.put<TextItem>({ kind, id: nextId(kind), text });
    this.streaming = { kind, id: item.id, messageId };
    return [upsert(item)];
  }

  private tool(update: acp.ToolCall | acp.ToolCallUpdate, fresh: boolean): Op[] {
    this.streaming = null;
    const existing = this.byId.get(update.toolCallId) as ToolItem | undefined;
    const item: ToolItem = existing ?? {
      kind: "tool",
      id: update.toolCallId,
      title: "",
      toolKind: "other",
      status: "pending",
      locations: [],
      diffs: [],
      text: "",
      terminalIds: [],
    };
    if (update.title != null) item.title = update.title;
    if (update.kind != null) item.toolKind = update.kind;
    if (update.status != null) item.status = update.status;
    else if (fresh && !existing) item.status = "pending";
    if (update.locations != null) item.locations = update.locations.map((l) => ({ path: l.path, line: l.line ?? null }));
    if (update.content != null) {
      const diffs: ToolItem["diffs"] = [];
      const texts: string[] = [];
      const terminals: string[] = [];
      for (const c of update.content) {
        if (c.type === "diff") diffs.push({ path: c.path, ...diffStat(c.oldText, c.newText), isNew: c.oldText == null });
        else if (c.type === "terminal") terminals.push(c.terminalId);
        else if (c.type === "content") texts.push(blockText(c.content));
      }
      item.diffs = diffs;
      item.text = texts.join("\n");
      item.terminalIds = terminals;
    }
    const ops = [upsert(this.put(item))];
    const asked = fresh ? agentMeta(update)?.["permission"] : undefined;
    if (asked && typeof asked === "object") ops.push(...this.replayedPermission(update, asked as ReplayedPermission));
    return ops;
  }

  /** A permission card the agent replays (a reloaded chat): the question and its answer. */
  private replayedPermission(update: acp.ToolCall | acp.ToolCallUpdate, asked: ReplayedPermission): Op[] {
    const options = Array.isArray(asked.options)
      ? asked.options.map((o) => ({ optionId: String(o.optionId), name: String(o.name), kind: String(o.kind) }))
      : [];
    return this.addPermission({
      id: `permission-${update.toolCallId}`,
      title: typeof asked.title === "string" ? asked.title : "The agent asks permission",
      detail: describeToolCall(update),
      options,
      answered: typeof asked.answer === "string" ? asked.answer : "cancelled",
    });
  }

  apply(update: acp.SessionUpdate): Op[] {
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        return this.chunk("agent", update);
      case "agent_thought_chunk":
        return this.chunk("thought", update);
      case "user_message_chunk":
        return this.chunk("user", update);
      case "tool_call":
        return this.tool(update, true);
      case "tool_call_update":
        return this.tool(update, false);
      case "plan": {
        this.streaming = null;
        const last = [...this.items].reverse().find((i) => i.kind === "plan");
        // One plan card per run of plan updates: a plan updated after other output moves down.
        const id = last && this.items[this.items.length - 1] === last ? last.id : nextId("plan");
        const entries = update.entries.map((e) => ({ content: e.content, priority: e.priority, status: e.status }));
        return [upsert(this.put<PlanItem>({ kind: "plan", id, entries }))];
      }
      case "available_commands_update":
        return this.setState({
          commands: update.availableCommands.map((c) => ({
            name: c.name,
            description: c.description,
            hint: c.input && "hint" in c.input ? c.input.hint : undefined,
          })),
        });
      case "config_option_update":
        return this.setState({ configOptions: configSelects(update.configOptions) });
      case "current_mode_update": {
        const options = this.state.configOptions.map((o) =>
          o.category === "mode" ? { ...o, currentValue: update.currentModeId } : o,
        );
        return this.setState({ configOptions: options });
      }
      case "session_info_update":
        return update.title !== undefined ? this.setState({ title: update.title ?? null }) : [];
      case "usage_update": {
        const cost = update.cost ? `${update.cost.amount.toFixed(4)} ${update.cost.currency}` : undefined;
        return this.setState({ usage: { used: update.used, size: update.size, cost } });
      }
      case "notice":
        return this.addNotice(
          update.description ? `${update.title}: ${update.description}` : update.title,
          update.severity,
          false,
        );
      default:
        return [];
    }
  }
}
