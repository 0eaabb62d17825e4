// The chat transcript as the webview shows it, built from ACP session updates.
// `apply` folds one update into the model and returns the operations the webview
// needs to follow (upsert or remove an item, append streamed text, change the header
// state); the webview never sees raw protocol messages. A subagent session's updates
// (`apply(update, childSessionId)`) go into its block: items whose `parent` is the
// subagent item, ids prefixed with the child's session id, its own streaming. An operation carries a copy of its
// item as it is now, never the live object: operations may wait (batched) before
// they cross to the webview, and the appends that follow must not be in them already.

import type * as acp from "@agentclientprotocol/sdk/unstable";
import {
  agentMeta,
  blockText,
  diffStat,
  headerChange,
  type CompactionItem,
  type HeaderState,
  type Item,
  type Op,
  type PermissionItem,
  type PlanItem,
  type SubagentItem,
  type TextItem,
  type ToolItem,
} from "./chatItems";
import { describeToolCall } from "./permissions";

export { configSelects, diffStat, META_KEY } from "./chatItems";
export type {
  CompactionItem,
  ConfigSelect,
  HeaderState,
  Item,
  ItemKind,
  Location,
  Op,
  PermissionItem,
  PlanItem,
  SubagentItem,
  TextItem,
  ToolItem,
} from "./chatItems";

interface ReplayedPermission {
  title?: unknown;
  options?: { optionId?: unknown; name?: unknown; kind?: unknown }[];
  answer?: unknown;
  modified?: unknown;
}

const upsert = (item: Item): Op => ({ op: "upsert", item: structuredClone(item) });

/** Where a session's items go: the chat itself, or a subagent's block. */
interface Scope {
  /** The subagent item whose block holds the items (none: the chat). */
  parent?: string;
  /** Put before the ids the agent gives (tool calls, plans, compactions): a child's may repeat the parent's. */
  prefix: string;
  streaming: { kind: "agent" | "thought" | "user"; id: string; messageId?: string } | null;
}

const placed = (scope: Scope): { parent?: string } => (scope.parent ? { parent: scope.parent } : {});

let counter = 0;
const nextId = (prefix: string): string => `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`;

export class ChatModel {
  readonly items: Item[] = [];
  private readonly byId = new Map<string, Item>();
  private readonly main: Scope = { prefix: "", streaming: null };
  /** The subagent sessions in this transcript, by session id. */
  private readonly children = new Map<string, Scope>();
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
    this.children.clear();
    this.main.streaming = null;
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
   * items of the chat itself as preceded them then. The agent does not record them, so
   * its replay lacks them.
   */
  keepLocalNotices(earlier: ChatModel): void {
    const local = (item: Item): boolean => item.kind === "notice" && item.local === true;
    let seen = 0;
    const placedNotices: { after: number; item: Item }[] = [];
    for (const item of earlier.items) {
      if (local(item)) placedNotices.push({ after: seen, item: { ...item } });
      else if (!item.parent) seen += 1;
    }
    for (const { after, item } of placedNotices.reverse()) {
      let index = 0;
      for (let remote = 0; index < this.items.length && remote < after; index++) {
        const here = this.items[index]!;
        if (!local(here) && !here.parent) remote += 1;
      }
      // After the last item of a subagent block the notice follows (not inside it).
      while (index < this.items.length && this.items[index]!.parent) index++;
      this.items.splice(index, 0, item);
      this.byId.set(item.id, item);
    }
    this.main.streaming = null;
  }

  setState(state: Partial<HeaderState>): Op[] {
    this.state = { ...this.state, ...state };
    return [{ op: "state", state }];
  }

  /** The user's own prompt, shown at once (the agent does not echo it). */
  addUser(text: string): Op[] {
    this.main.streaming = null;
    return [upsert(this.put({ kind: "user", id: nextId("user"), text }))];
  }

  /** A notice; `local` ones are this client's (see keepLocalNotices), others the agent's. */
  addNotice(text: string, level = "info", local = true, scope: Scope = this.main): Op[] {
    scope.streaming = null;
    const item: TextItem = { kind: "notice", id: nextId("notice"), text, level, ...placed(scope), ...(local ? { local } : {}) };
    return [upsert(this.put(item))];
  }

  /** A permission card; one of a subagent's session goes in its block. */
  addPermission(item: Omit<PermissionItem, "kind" | "parent">, sessionId?: string): Op[] {
    const scope = (sessionId && this.children.get(sessionId)) || this.main;
    scope.streaming = null;
    return [upsert(this.put({ kind: "permission", ...item, ...placed(scope) }))];
  }

  answerPermission(id: string, answer: string, modified = false): Op[] {
    const item = this.byId.get(id);
    if (!item || item.kind !== "permission") return [];
    item.answered = answer;
    if (modified) item.modified = true;
    return [upsert(item)];
  }

  get(id: string): Item | undefined {
    return this.byId.get(id);
  }

  /** Whether `sessionId` is a subagent session of this transcript (its updates and questions go into its block). */
  hasSubagent(sessionId: string): boolean {
    return this.children.has(sessionId);
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

  private remove(id: string): Op[] {
    const item = this.byId.get(id);
    if (!item) return [];
    this.byId.delete(id);
    this.items.splice(this.items.indexOf(item), 1);
    return [{ op: "remove", id }];
  }

  private chunk(kind: "agent" | "thought" | "user", update: acp.ContentChunk, scope: Scope): Op[] {
    const text = blockText(update.content);
    const notice = kind === "agent" ? agentMeta(update)?.["notice"] : undefined;
    if (notice && typeof notice === "object") {
      const { level, text: noticeText } = notice as { level?: unknown; text?: unknown };
      return this.addNotice(typeof noticeText === "string" ? noticeText : text.trim(), typeof level === "string" ? level : "info", false, scope);
    }
    const messageId = update.messageId ?? undefined;
    const current = scope.streaming;
    if (current && current.kind === kind && (messageId === undefined || current.messageId === messageId)) {
      const item = this.byId.get(current.id) as TextItem;
      item.text += text;
      return [{ op: "append", id: item.id, text }];
    }
    const item = this.put<TextItem>({ kind, id: nextId(kind), text, ...placed(scope) });
    scope.streaming = { kind, id: item.id, messageId };
    return [upsert(item)];
  }

  private tool(update: acp.ToolCall | acp.ToolCallUpdate, fresh: boolean, scope: Scope): Op[] {
    scope.streaming = null;
    const id = scope.prefix + update.toolCallId;
    const existing = this.byId.get(id) as ToolItem | undefined;
    const item: ToolItem = existing ?? {
      kind: "tool",
      id,
      ...placed(scope),
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
    if (asked && typeof asked === "object") ops.push(...this.replayedPermission(update, asked as ReplayedPermission, scope));
    return ops;
  }

  /** A permission card the agent replays (a reloaded chat): the question and its answer. */
  private replayedPermission(update: acp.ToolCall | acp.ToolCallUpdate, asked: ReplayedPermission, scope: Scope): Op[] {
    const options = Array.isArray(asked.options)
      ? asked.options.map((o) => ({ optionId: String(o.optionId), name: String(o.name), kind: String(o.kind) }))
      : [];
    const item: PermissionItem = {
      kind: "permission",
      id: `permission-${scope.prefix}${update.toolCallId}`,
      ...placed(scope),
      title: typeof asked.title === "string" ? asked.title : "The agent asks permission",
      detail: describeToolCall(update),
      options,
      answered: typeof asked.answer === "string" ? asked.answer : "cancelled",
      ...(asked.modified === true ? { modified: true } : {}),
    };
    return [upsert(this.put(item))];
  }

  /** The legacy `plan`: one plan card per run of plan updates (a plan updated after other output moves down). */
  private plan(update: acp.Plan, scope: Scope): Op[] {
    scope.streaming = null;
    const last = [...this.items].reverse().find((i) => i.kind === "plan" && i.parent === scope.parent && i.planId === undefined);
    const id = last && this.items[this.items.length - 1] === last ? last.id : nextId("plan");
    const entries = update.entries.map((e) => ({ content: e.content, priority: e.priority, status: e.status }));
    return [upsert(this.put<PlanItem>({ kind: "plan", id, ...placed(scope), entries }))];
  }

  /** `plan_update`: the plan with this id, replaced where it stands (items, Markdown or a file). */
  private planUpdate(update: acp.PlanUpdate, scope: Scope): Op[] {
    scope.streaming = null;
    const plan = update.plan;
    const id = `plan:${scope.prefix}${plan.planId}`;
    const item: PlanItem = { kind: "plan", id, ...placed(scope), planId: plan.planId, entries: [] };
    if (plan.type === "items") item.entries = plan.entries.map((e) => ({ content: e.content, priority: e.priority, status: e.status }));
    else if (plan.type === "markdown") item.markdown = plan.content;
    else if (plan.type === "file") item.uri = plan.uri;
    const existing = this.byId.get(id);
    if (existing) this.byId.delete(id); // replaced whole: no field of the old content stays
    if (existing) this.items.splice(this.items.indexOf(existing), 1, item);
    else this.items.push(item);
    this.byId.set(id, item);
    return [upsert(item)];
  }

  /** `compaction_update` (patch: an omitted summary or error stays) and `compaction_summary_chunk`. */
  private compaction(update: acp.CompactionUpdate | acp.CompactionSummaryChunk, scope: Scope): Op[] {
    scope.streaming = null;
    const id = `compaction:${scope.prefix}${update.compactionId}`;
    const existing = this.byId.get(id) as CompactionItem | undefined;
    const item: CompactionItem = existing ?? { kind: "compaction", id, ...placed(scope), status: "in_progress", text: "" };
    if (!("status" in update)) {
      const text = blockText(update.content);
      if (!existing) return [upsert(this.put({ ...item, text }))];
      item.text += text;
      return [{ op: "append", id, text }];
    }
    item.status = update.status;
    if (update.summary !== undefined) item.text = (update.summary ?? []).map(blockText).join("");
    if (update.error !== undefined) item.error = update.error;
    return [upsert(this.put(item))];
  }

  /** `subagent_update`: a child session announced (its block) or its title, description, state changed. */
  private subagent(update: acp.SubagentUpdate, scope: Scope): Op[] {
    scope.streaming = null;
    const id = `subagent:${update.sessionId}`;
    const existing = this.byId.get(id) as SubagentItem | undefined;
    const item: SubagentItem = existing ?? {
      kind: "subagent",
      id,
      ...placed(scope),
      sessionId: update.sessionId,
      title: null,
      description: null,
      state: null,
    };
    if (update.title !== undefined) item.title = update.title;
    if (update.description !== undefined) item.description = update.description;
    if (update.state !== undefined) {
      item.state = update.state?.state ?? null;
      item.stopReason = update.state && "stopReason" in update.state ? ((update.state.stopReason as string | null | undefined) ?? null) : null;
    }
    if (!this.children.has(update.sessionId)) {
      this.children.set(update.sessionId, { parent: id, prefix: `${update.sessionId}/`, streaming: null });
    }
    return [upsert(this.put(item))];
  }

  /** `session_message` / `session_message_chunk`: a message between sessions (a subagent's task), as a user line. */
  private sessionMessage(update: acp.SessionMessage | acp.SessionMessageChunk, scope: Scope): Op[] {
    scope.streaming = null;
    const id = `message:${scope.prefix}${update.messageId}`;
    const existing = this.byId.get(id) as TextItem | undefined;
    if ("content" in update && update.content && !Array.isArray(update.content)) {
      const text = blockText(update.content);
      if (!existing) return [upsert(this.put<TextItem>({ kind: "user", id, ...placed(scope), text }))];
      existing.text += text;
      return [{ op: "append", id, text }];
    }
    const content = (update as acp.SessionMessage).content;
    if (existing && content === undefined) return [];
    const text = (content ?? []).map(blockText).join("");
    return [upsert(this.put<TextItem>({ kind: "user", id, ...placed(scope), text }))];
  }

  /** One update of the shown session, or (`sessionId`) of one of its subagent sessions; [] for a session it does not know. */
  apply(update: acp.SessionUpdate, sessionId?: string): Op[] {
    const scope = sessionId === undefined ? this.main : this.children.get(sessionId);
    if (!scope) return [];
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        return this.chunk("agent", update, scope);
      case "agent_thought_chunk":
        return this.chunk("thought", update, scope);
      case "user_message_chunk":
        return this.chunk("user", update, scope);
      case "tool_call":
        return this.tool(update, true, scope);
      case "tool_call_update":
        return this.tool(update, false, scope);
      case "plan":
        return this.plan(update, scope);
      case "plan_update":
        return this.planUpdate(update, scope);
      case "plan_removed":
        return this.remove(`plan:${scope.prefix}${update.planId}`);
      case "notice":
        return this.addNotice(update.description ? `${update.title}\n${update.description}` : update.title, update.severity, false, scope);
      case "compaction_update":
      case "compaction_summary_chunk":
        return this.compaction(update, scope);
      case "subagent_update":
        return this.subagent(update, scope);
      case "session_message":
      case "session_message_chunk":
        return this.sessionMessage(update, scope);
      default: {
        const change = scope === this.main ? headerChange(update, this.state) : null;
        return change ? this.setState(change) : [];
      }
    }
  }
}
