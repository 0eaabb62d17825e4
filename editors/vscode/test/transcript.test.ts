// The transcript property test (issue 21): random bursts and interleavings of streamed
// updates go through the model, the batching queue and a structured-clone hop (what
// postMessage does) into the webview's own transcript code (media/transcript.js, run
// headless); the webview must end up showing exactly what the agent sent.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import type * as acp from "@agentclientprotocol/sdk/unstable";
import { ChatModel, type CompactionItem, type Item, type Op, type PlanItem, type SubagentItem, type ToolItem } from "../src/chatModel";
import type { MarkdownApi, ToView, TranscriptApi } from "../src/messages";
import { OpBatcher, type BatchTimer } from "../src/opBatcher";

interface Entry {
  item: Item & { text?: string };
}
interface Transcript {
  apply(ops: Op[]): void;
  items(): (Item & { text?: string })[];
}
const require = createRequire(__filename);
const media = (name: string): string => join(__dirname, "..", "..", "media", name);
// The webview's own scripts, typed as the webview declares them (src/messages.ts).
const { createTranscript } = require(media("transcript.js")) as TranscriptApi;
const md = require(media("markdown.js")) as MarkdownApi;

/** A headless webview: the real transcript code; drawing = rendering the Markdown. */
function headlessWebview(): { transcript: Transcript; drawn: Map<string, string> } {
  const drawn = new Map<string, string>();
  const draw = (entry: Entry): void => {
    if (typeof entry.item.text === "string") drawn.set(entry.item.id, md.render(entry.item.text));
  };
  const transcript = createTranscript({
    reset: () => drawn.clear(),
    created: () => undefined,
    changed: draw,
    appended: draw,
    removed: (entry: Entry) => void drawn.delete(entry.item.id),
    state: () => undefined,
  });
  return { transcript, drawn };
}

/** A timer the test fires when it likes (any interleaving of bursts and flushes). */
class ManualTimer implements BatchTimer {
  private pending = new Map<number, () => void>();
  private next = 0;
  set(run: () => void): unknown {
    this.pending.set(++this.next, run);
    return this.next;
  }
  clear(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  fire(): void {
    for (const [handle, run] of [...this.pending]) {
      this.pending.delete(handle);
      run();
    }
  }
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ["a", "b ", "**bold** ", "`x` ", "\n", "\n\n", "- item\n", "```\ncode\n", "é ", "<b> ", "#"];

/** An update as the agent sends it: of the shown session, or of a subagent's (`session`). */
interface Sent {
  update: acp.SessionUpdate;
  session?: string;
}

/** Long because: one branch per kind of update the agent may send, with their odds. */
function randomUpdates(random: () => number, count: number): Sent[] {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const text = (): string => Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(WORDS)).join("");
  const out: Sent[] = [];
  const children: string[] = [];
  let tools = 0;
  let message = 0;
  while (out.length < count) {
    // Now and then a burst goes to a subagent announced before (its own stream, its own tool ids).
    const session = children.length && random() < 0.3 ? pick(children) : undefined;
    const push = (update: acp.SessionUpdate): void => void out.push(session ? { update, session } : { update });
    const r = random();
    if (r < 0.45) {
      // a burst of chunks of one message, sometimes with message ids
      const id = random() < 0.3 ? `m${++message}` : undefined;
      for (let n = 1 + Math.floor(random() * 8); n > 0; n--) {
        push({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: text() }, ...(id ? { messageId: id } : {}) });
      }
    } else if (r < 0.55) {
      push({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: text() } });
    } else if (r < 0.65) {
      const id = `t${random() < 0.5 && tools > 0 ? Math.ceil(random() * tools) : ++tools}`;
      push({ sessionUpdate: "tool_call", toolCallId: id, title: `tool ${id}`, kind: "read", status: "pending" });
      push({ sessionUpdate: "tool_call_update", toolCallId: id, status: random() < 0.5 ? "completed" : "failed",
        content: [{ type: "content", content: { type: "text", text: text() } }] });
    } else if (r < 0.7) {
      out.push({ update: { sessionUpdate: "plan", entries: [{ content: text(), priority: "high", status: pick(["pending", "in_progress", "completed"] as const) }] } });
    } else if (r < 0.76) {
      const planId = pick(["p1", "p2"]);
      push(random() < 0.5
        ? { sessionUpdate: "plan_update", plan: { type: "markdown", planId, content: text() } }
        : { sessionUpdate: "plan_update", plan: { type: "items", planId, entries: [{ content: text(), priority: "low", status: "pending" }] } });
    } else if (r < 0.79) {
      push({ sessionUpdate: "plan_removed", planId: pick(["p1", "p2"]) });
    } else if (r < 0.84) {
      const compactionId = pick(["k1", "k2"]);
      push(random() < 0.5
        ? { sessionUpdate: "compaction_summary_chunk", compactionId, content: { type: "text", text: text() } }
        : { sessionUpdate: "compaction_update", compactionId, status: pick(["in_progress", "completed", "failed"]),
          ...(random() < 0.5 ? { summary: [{ type: "text" as const, text: text() }] } : {}) });
    } else if (r < 0.88) {
      const note = text();
      push(random() < 0.5
        ? { sessionUpdate: "agent_message_chunk", content: { type: "text", text: note }, _meta: { adkAcp: { notice: { level: "info", text: note } } } }
        : { sessionUpdate: "notice", severity: "warning", title: note.trim() || "?" });
    } else if (r < 0.93) {
      const child = random() < 0.6 || children.length === 0 ? `c${children.length + 1}` : pick(children);
      out.push({ update: { sessionUpdate: "subagent_update", sessionId: child, title: `sub ${child}`,
        state: random() < 0.5 ? { state: "running" } : { state: "idle", stopReason: "end_turn" } } });
      if (!children.includes(child)) children.push(child);
    } else {
      push({ sessionUpdate: "user_message_chunk", content: { type: "text", text: text() } });
    }
  }
  return out;
}

/** A scope's key: "" for the shown session, the child's session id for a subagent's. */
const scopeOf = (item: { parent?: string }): string => (item.parent ? item.parent.slice("subagent:".length) : "");

/** What the agent sent, by scope and kind: answer, thought and user text, notices, tool end states, the last plan, plans by id, compactions, subagents. */
function sent(updates: Sent[]): Record<string, unknown> {
  const texts: Record<string, string> = {};
  const add = (key: string, t: string): void => void (texts[key] = (texts[key] ?? "") + t);
  const notices: string[] = [];
  const tools: Record<string, string> = {};
  const plans: Record<string, string> = {};
  const compactions: Record<string, string> = {};
  const subagents: Record<string, string> = {};
  let plan: string[] = [];
  for (const { update: u, session } of updates) {
    const scope = session ?? "";
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") {
      if (u._meta) notices.push(u.content.text);
      else add(`agent:${scope}`, u.content.text);
    } else if (u.sessionUpdate === "agent_thought_chunk" && u.content.type === "text") add(`thought:${scope}`, u.content.text);
    else if (u.sessionUpdate === "user_message_chunk" && u.content.type === "text") add(`user:${scope}`, u.content.text);
    else if (u.sessionUpdate === "notice") notices.push(u.title);
    else if (u.sessionUpdate === "tool_call_update" && u.status) tools[`${scope}:${u.toolCallId}`] = u.status;
    else if (u.sessionUpdate === "plan") plan = u.entries.map((e) => `${e.status}:${e.content}`);
    else if (u.sessionUpdate === "plan_update") {
      plans[`${scope}:${u.plan.planId}`] = u.plan.type === "markdown" ? u.plan.content : u.plan.type === "items" ? u.plan.entries.map((e) => e.content).join("|") : "";
    } else if (u.sessionUpdate === "plan_removed") delete plans[`${scope}:${u.planId}`];
    else if (u.sessionUpdate === "compaction_summary_chunk" && u.content.type === "text") {
      const key = `${scope}:${u.compactionId}`;
      const [status, summary] = (compactions[key] ?? "in_progress|").split(/\|(.*)/s) as [string, string];
      compactions[key] = `${status}|${summary}${u.content.text}`;
    } else if (u.sessionUpdate === "compaction_update") {
      const key = `${scope}:${u.compactionId}`;
      const before = (compactions[key] ?? "in_progress|").split(/\|(.*)/s)[1] ?? "";
      const summary = u.summary === undefined ? before : (u.summary ?? []).map((b) => (b.type === "text" ? b.text : "")).join("");
      compactions[key] = `${u.status}|${summary}`;
    } else if (u.sessionUpdate === "subagent_update") subagents[u.sessionId] = `${u.title}:${u.state?.state}`;
  }
  return { texts, notices, tools, plan, plans, compactions, subagents };
}

function shown(items: (Item & { text?: string })[]): Record<string, unknown> {
  const texts: Record<string, string> = {};
  for (const i of items) {
    if (i.kind === "agent" || i.kind === "thought" || i.kind === "user") {
      const key = `${i.kind}:${scopeOf(i)}`;
      texts[key] = (texts[key] ?? "") + i.text;
    }
  }
  const legacy = items.filter((i) => i.kind === "plan" && i.planId === undefined);
  const last = legacy[legacy.length - 1];
  const byKey = <T extends Item>(kind: T["kind"], key: (i: T) => string | null, value: (i: T) => string): Record<string, string> =>
    Object.fromEntries(items.filter((i): i is T => i.kind === kind && key(i as T) !== null).map((i) => [key(i), value(i)]));
  return {
    texts,
    notices: items.filter((i) => i.kind === "notice").map((i) => i.text),
    tools: byKey<ToolItem>("tool", (i) => `${scopeOf(i)}:${i.id.split("/").pop()}`, (i) => i.status),
    plan: last && last.kind === "plan" ? last.entries.map((e) => `${e.status}:${e.content}`) : [],
    plans: byKey<PlanItem>("plan", (i) => (i.planId === undefined ? null : `${scopeOf(i)}:${i.planId}`), (i) => i.markdown ?? i.entries.map((e) => e.content).join("|")),
    compactions: byKey<CompactionItem>("compaction", (i) => `${scopeOf(i)}:${i.id.split(/[:/]/).pop()}`, (i) => `${i.status}|${i.text}`),
    subagents: byKey<SubagentItem>("subagent", (i) => i.sessionId, (i) => `${i.title}:${i.state}`),
  };
}

function run(seed: number, count: number): void {
  const random = rng(seed);
  const updates = randomUpdates(random, count);
  const model = new ChatModel();
  const webview = headlessWebview();
  const timer = new ManualTimer();
  const batcher = new OpBatcher((message: ToView) => {
    const delivered = structuredClone(message); // postMessage copies when the message leaves
    if (delivered.type === "ops") webview.transcript.apply(delivered.ops);
  }, 4, timer);
  batcher.post({ type: "ops", ops: model.reset() });
  for (const { update, session } of updates) {
    batcher.post({ type: "ops", ops: model.apply(update, session) });
    const r = random();
    if (r < 0.15) timer.fire(); // the batch leaves between two chunks
    else if (r < 0.2) batcher.post({ type: "turn", running: true }); // another message flushes it
  }
  timer.fire();
  const items = webview.transcript.items();
  const label = `seed ${seed}`;
  assert.deepEqual(shown(items), sent(updates), label);
  assert.deepEqual(items, model.items.map((i) => structuredClone(i)), label);
  for (const item of items) {
    if (typeof item.text === "string" && item.kind !== "notice") {
      assert.equal(webview.drawn.get(item.id), md.render(item.text), label);
    }
  }
}

test("property: the webview shows exactly what the agent sent, for any bursts and batch timing", () => {
  for (let seed = 1; seed <= 400; seed++) run(seed, 5 + (seed % 60));
});

test("a fast 60-chunk answer and a two-chunk answer, all in one batch, are not doubled", () => {
  for (const n of [2, 60]) {
    const model = new ChatModel();
    const webview = headlessWebview();
    const timer = new ManualTimer();
    const batcher = new OpBatcher((m) => {
      const d = structuredClone(m);
      if (d.type === "ops") webview.transcript.apply(d.ops);
    }, 4, timer);
    let expected = "";
    for (let i = 0; i < n; i++) {
      const text = `w${i} `;
      expected += text;
      batcher.post({ type: "ops", ops: model.apply({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } }) });
    }
    timer.fire();
    const [item] = webview.transcript.items();
    assert.equal(item?.text, expected);
  }
});

test("a replayed tool call with an answered permission shows the card with its answer", () => {
  const model = new ChatModel();
  model.apply({
    sessionUpdate: "tool_call", toolCallId: "t1", title: "Write a.txt", kind: "edit", status: "completed",
    _meta: { adkAcp: { permission: { title: "Write a.txt", options: [{ optionId: "proceed_once", name: "Allow", kind: "allow_once" }], answer: "proceed_once" } } },
  });
  assert.deepEqual(model.items.map((i) => i.kind), ["tool", "permission"]);
  const card = model.items[1];
  assert.ok(card?.kind === "permission" && card.answered === "proceed_once" && card.options[0]?.name === "Allow");
});

test("a replayed edit the user changed before allowing says so on its card; a live one too", () => {
  const model = new ChatModel();
  const allow = [{ optionId: "proceed_once", name: "Allow", kind: "allow_once" }];
  model.apply({
    sessionUpdate: "tool_call", toolCallId: "t1", title: "Edit a.txt", kind: "edit", status: "completed",
    _meta: { adkAcp: { permission: { title: "Edit a.txt", options: allow, answer: "proceed_once", modified: true } } },
  });
  const card = model.items[1];
  assert.ok(card?.kind === "permission" && card.answered === "proceed_once" && card.modified === true);
  model.addPermission({ id: "perm-9", title: "Edit b.txt", detail: "", options: allow });
  model.answerPermission("perm-9", "proceed_once", true);
  const live = model.get("perm-9");
  assert.ok(live?.kind === "permission" && live.modified === true);
});

test("this client's notices survive a reload, where they were; the agent's come from its replay", () => {
  const live = new ChatModel();
  live.addUser("hi");
  live.apply({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hello" } });
  live.addNotice("The agent stopped (killed by SIGKILL); restarting it.", "warning");
  live.addUser("more");
  live.addNotice("The turn stopped: max turn requests.", "warning");
  const replayed = new ChatModel();
  replayed.apply({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "hi" } });
  replayed.apply({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hello" } });
  replayed.apply({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "more" } });
  replayed.keepLocalNotices(live);
  assert.deepEqual(
    replayed.items.map((i) => (i.kind === "notice" ? `notice:${i.text.split(/[;:(]/)[0]!.trim()}` : i.kind)),
    ["user", "agent", "notice:The agent stopped", "user", "notice:The turn stopped"],
  );
});
