// The transcript property test (issue 21): random bursts and interleavings of streamed
// updates go through the model, the batching queue and a structured-clone hop (what
// postMessage does) into the webview's own transcript code (media/transcript.js, run
// headless); the webview must end up showing exactly what the agent sent.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import type * as acp from "@agentclientprotocol/sdk";
import { ChatModel, type Item, type Op } from "../src/chatModel";
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

function randomUpdates(random: () => number, count: number): acp.SessionUpdate[] {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const text = (): string => Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(WORDS)).join("");
  const out: acp.SessionUpdate[] = [];
  let tools = 0;
  let message = 0;
  while (out.length < count) {
    const r = random();
    if (r < 0.55) {
      // a burst of chunks of one message, sometimes with message ids
      const id = random() < 0.3 ? `m${++message}` : undefined;
      for (let n = 1 + Math.floor(random() * 8); n > 0; n--) {
        out.push({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: text() }, ...(id ? { messageId: id } : {}) });
      }
    } else if (r < 0.7) {
      out.push({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: text() } });
    } else if (r < 0.82) {
      const id = `t${random() < 0.5 && tools > 0 ? Math.ceil(random() * tools) : ++tools}`;
      out.push({ sessionUpdate: "tool_call", toolCallId: id, title: `tool ${id}`, kind: "read", status: "pending" });
      out.push({ sessionUpdate: "tool_call_update", toolCallId: id, status: random() < 0.5 ? "completed" : "failed",
        content: [{ type: "content", content: { type: "text", text: text() } }] });
    } else if (r < 0.9) {
      out.push({ sessionUpdate: "plan", entries: [{ content: text(), priority: "high", status: pick(["pending", "in_progress", "completed"] as const) }] });
    } else if (r < 0.95) {
      const note = text();
      out.push({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: note }, _meta: { adkAcp: { notice: { level: "info", text: note } } } });
    } else {
      out.push({ sessionUpdate: "user_message_chunk", content: { type: "text", text: text() } });
    }
  }
  return out;
}

/** What the agent sent, by kind: all answer text, all thought text, notices, tool end states, the last plan. */
function sent(updates: acp.SessionUpdate[]): Record<string, unknown> {
  let agent = "";
  let thought = "";
  let user = "";
  const notices: string[] = [];
  const tools = new Map<string, string>();
  let plan: string[] = [];
  for (const u of updates) {
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") {
      if (u._meta) notices.push(u.content.text);
      else agent += u.content.text;
    } else if (u.sessionUpdate === "agent_thought_chunk" && u.content.type === "text") thought += u.content.text;
    else if (u.sessionUpdate === "user_message_chunk" && u.content.type === "text") user += u.content.text;
    else if (u.sessionUpdate === "tool_call_update" && u.status) tools.set(u.toolCallId, u.status);
    else if (u.sessionUpdate === "plan") plan = u.entries.map((e) => `${e.status}:${e.content}`);
  }
  return { agent, thought, user, notices, tools: Object.fromEntries(tools), plan };
}

function shown(items: (Item & { text?: string })[]): Record<string, unknown> {
  const join = (kind: string): string => items.filter((i) => i.kind === kind).map((i) => i.text ?? "").join("");
  const plans = items.filter((i) => i.kind === "plan");
  const last = plans[plans.length - 1];
  return {
    agent: join("agent"),
    thought: join("thought"),
    user: join("user"),
    notices: items.filter((i) => i.kind === "notice").map((i) => i.text),
    tools: Object.fromEntries(items.filter((i) => i.kind === "tool").map((i) => [i.id, i.kind === "tool" ? i.status : ""])),
    plan: last && last.kind === "plan" ? last.entries.map((e) => `${e.status}:${e.content}`) : [],
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
  for (const update of updates) {
    batcher.post({ type: "ops", ops: model.apply(update) });
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
