import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatModel, diffStat, type CompactionItem, type PlanItem, type SubagentItem, type ToolItem } from "../src/chatModel";

const text = (t: string) => ({ type: "text" as const, text: t });

test("agent chunks stream into one message; a tool call starts a new one", () => {
  const model = new ChatModel();
  const first = model.apply({ sessionUpdate: "agent_message_chunk", content: text("Hel") });
  assert.equal(first[0]?.op, "upsert");
  const second = model.apply({ sessionUpdate: "agent_message_chunk", content: text("lo") });
  assert.deepEqual(second.map((o) => o.op), ["append"]);
  model.apply({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Read a.txt", kind: "read", status: "pending" });
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("again") });
  const kinds = model.items.map((i) => i.kind);
  assert.deepEqual(kinds, ["agent", "tool", "agent"]);
  assert.equal((model.items[0] as { text: string }).text, "Hello");
});

test("thoughts are their own items; a new messageId starts a new message", () => {
  const model = new ChatModel();
  model.apply({ sessionUpdate: "agent_thought_chunk", content: text("hmm") });
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("a"), messageId: "m1" });
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("b"), messageId: "m2" });
  assert.deepEqual(model.items.map((i) => i.kind), ["thought", "agent", "agent"]);
});

test("tool call updates merge: status, locations, diff stats, text, terminals", () => {
  const model = new ChatModel();
  model.apply({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Edit a.txt", kind: "edit", status: "pending",
    locations: [{ path: "/w/a.txt", line: 3 }],
    content: [{ type: "diff", path: "/w/a.txt", oldText: "a\nb\n", newText: "a\nc\nd\n" }] });
  model.apply({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
  const tool = model.get("t1") as ToolItem;
  assert.equal(tool.status, "completed");
  assert.equal(tool.title, "Edit a.txt");
  assert.deepEqual(tool.locations, [{ path: "/w/a.txt", line: 3 }]);
  assert.deepEqual(tool.diffs, [{ path: "/w/a.txt", added: 2, removed: 1, isNew: false }]);
  model.apply({ sessionUpdate: "tool_call_update", toolCallId: "t1",
    content: [{ type: "content", content: text("done") }, { type: "terminal", terminalId: "term-1" }] });
  assert.equal(tool.text, "done");
  assert.deepEqual(tool.terminalIds, ["term-1"]);
  assert.equal(model.items.length, 1);
});

test("plan, commands, config options, mode updates, usage, notices", () => {
  const model = new ChatModel();
  model.apply({ sessionUpdate: "plan", entries: [{ content: "one", priority: "high", status: "pending" }] });
  model.apply({ sessionUpdate: "plan", entries: [{ content: "one", priority: "high", status: "completed" }] });
  assert.equal(model.items.filter((i) => i.kind === "plan").length, 1);
  model.apply({ sessionUpdate: "available_commands_update", availableCommands: [{ name: "help", description: "Help", input: null }] });
  assert.deepEqual(model.state.commands, [{ name: "help", description: "Help", hint: undefined }]);
  model.apply({ sessionUpdate: "config_option_update", configOptions: [
    { type: "select", id: "mode", name: "Mode", category: "mode", currentValue: "default",
      options: [{ value: "default", name: "Default" }, { value: "yolo", name: "YOLO" }] },
    { type: "select", id: "model", name: "Model", category: "model", currentValue: "auto",
      options: [{ group: "g", name: "Gemini", options: [{ value: "auto", name: "Auto" }] }] },
  ] });
  assert.equal(model.state.configOptions.length, 2);
  assert.deepEqual(model.state.configOptions[1]?.options, [{ value: "auto", name: "Auto", description: undefined }]);
  model.apply({ sessionUpdate: "current_mode_update", currentModeId: "yolo" });
  assert.equal(model.state.configOptions[0]?.currentValue, "yolo");
  model.apply({ sessionUpdate: "usage_update", used: 1000, size: 1_000_000 });
  assert.deepEqual(model.state.usage, { used: 1000, size: 1_000_000, cost: undefined });
  model.apply({ sessionUpdate: "notice", severity: "warning", title: "MCP server died" });
  assert.equal(model.items.at(-1)?.kind, "notice");
});

test("reset empties the transcript; snapshot replays it", () => {
  const model = new ChatModel();
  model.addUser("hi");
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("hello") });
  assert.equal(model.snapshot().filter((o) => o.op === "upsert").length, 2);
  model.reset();
  assert.equal(model.items.length, 0);
});

test("diffStat counts added and removed lines", () => {
  assert.deepEqual(diffStat(null, "a\nb\n"), { added: 2, removed: 0 });
  assert.deepEqual(diffStat("a\nb", "a\nb"), { added: 0, removed: 0 });
  assert.deepEqual(diffStat("a\nb", "a\nx"), { added: 1, removed: 1 });
});

test("notice updates: a line of the agent's (title, then description), not this client's", () => {
  const model = new ChatModel();
  model.apply({ sessionUpdate: "notice", severity: "warning", title: "Retrying:", description: "the model was busy" });
  const [notice] = model.items;
  assert.ok(notice?.kind === "notice");
  assert.deepEqual([notice.text, notice.level, notice.local], ["Retrying:\nthe model was busy", "warning", undefined]);
});

test("compactions: a line of their own; chunks stream the summary, updates patch it", () => {
  const model = new ChatModel();
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("before") });
  const first = model.apply({ sessionUpdate: "compaction_summary_chunk", compactionId: "c1", content: text("<state") });
  assert.deepEqual(first.map((o) => o.op), ["upsert"]);
  assert.deepEqual(model.apply({ sessionUpdate: "compaction_summary_chunk", compactionId: "c1", content: text("_snapshot>") }),
    [{ op: "append", id: "compaction:c1", text: "_snapshot>" }]);
  const item = () => model.get("compaction:c1") as CompactionItem;
  assert.deepEqual([item().status, item().text], ["in_progress", "<state_snapshot>"]);
  model.apply({ sessionUpdate: "compaction_update", compactionId: "c1", status: "completed" }); // summary omitted: kept
  assert.deepEqual([item().status, item().text], ["completed", "<state_snapshot>"]);
  model.apply({ sessionUpdate: "compaction_update", compactionId: "c1", status: "completed", summary: [text("all of it")] });
  assert.equal(item().text, "all of it");
  model.apply({ sessionUpdate: "compaction_update", compactionId: "c2", status: "failed", error: "the model refused", summary: null });
  assert.deepEqual(model.items.map((i) => i.kind), ["agent", "compaction", "compaction"]);
  assert.deepEqual([(model.get("compaction:c2") as CompactionItem).error, (model.get("compaction:c2") as CompactionItem).text], ["the model refused", ""]);
  // The answer after a compaction is a new message, not the one before it.
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("after") });
  assert.equal(model.items.at(-1)?.kind, "agent");
});

test("plan operations: a plan by id is replaced where it stands (entries, Markdown, a file) and removed", () => {
  const model = new ChatModel();
  model.apply({ sessionUpdate: "plan_update", plan: { type: "markdown", planId: "p1", content: "# Plan\n1. read" } });
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("working") });
  const ops = model.apply({ sessionUpdate: "plan_update", plan: { type: "items", planId: "p1", entries: [{ content: "read", priority: "high", status: "completed" }] } });
  assert.deepEqual(ops.map((o) => o.op), ["upsert"]);
  assert.deepEqual(model.items.map((i) => i.kind), ["plan", "agent"]);
  const plan = model.get("plan:p1") as PlanItem;
  assert.deepEqual([plan.planId, plan.markdown, plan.entries.map((e) => e.status)], ["p1", undefined, ["completed"]]);
  model.apply({ sessionUpdate: "plan_update", plan: { type: "file", planId: "p2", uri: "file:///w/PLAN.md" } });
  assert.equal((model.get("plan:p2") as PlanItem).uri, "file:///w/PLAN.md");
  assert.deepEqual(model.apply({ sessionUpdate: "plan_removed", planId: "p1" }), [{ op: "remove", id: "plan:p1" }]);
  assert.deepEqual(model.apply({ sessionUpdate: "plan_removed", planId: "p1" }), []);
  assert.deepEqual(model.items.map((i) => i.id.startsWith("plan:") ? i.id : i.kind), ["agent", "plan:p2"]);
  assert.deepEqual(model.snapshot().filter((o) => o.op === "upsert").length, 2);
});

test("subagent sessions: a block with the subagent's messages, tool calls and plans; unknown sessions are ignored", () => {
  const model = new ChatModel();
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("Asking a helper.") });
  assert.deepEqual(model.apply({ sessionUpdate: "agent_message_chunk", content: text("x") }, "child"), []); // not announced
  model.apply({ sessionUpdate: "subagent_update", sessionId: "child", title: "codebase_investigator", description: "Find the parser", state: { state: "running" } });
  assert.ok(model.hasSubagent("child") && !model.hasSubagent("other"));
  model.apply({ sessionUpdate: "session_message", messageId: "m1", content: [text("Find the parser")] }, "child");
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("Looking") }, "child");
  model.apply({ sessionUpdate: "agent_message_chunk", content: text(" around") }, "child");
  model.apply({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Read a.py", kind: "read", status: "pending" }, "child");
  model.apply({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Read b.py", kind: "read", status: "pending" }); // the parent's own t1
  model.apply({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" }, "child");
  model.apply({ sessionUpdate: "usage_update", used: 5, size: 10 }, "child"); // the header is the shown session's
  model.apply({ sessionUpdate: "subagent_update", sessionId: "child", state: { state: "idle", stopReason: "end_turn" } });
  const sub = model.get("subagent:child") as SubagentItem;
  assert.deepEqual([sub.title, sub.description, sub.state, sub.stopReason], ["codebase_investigator", "Find the parser", "idle", "end_turn"]);
  assert.equal(model.state.usage, null);
  const rows = model.items.map((i) => `${i.parent ?? "-"} ${i.kind} ${i.kind === "tool" ? `${i.id} ${i.status}` : "text" in i ? i.text : ""}`);
  assert.deepEqual(rows, [
    "- agent Asking a helper.",
    "- subagent ",
    "subagent:child user Find the parser",
    "subagent:child agent Looking around",
    "subagent:child tool child/t1 completed",
    "- tool t1 pending",
  ]);
  // The parent's next words after the subagent are a message of their own, below its block.
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("It found it.") });
  assert.equal(model.items.at(-1)?.kind === "agent" && model.items.at(-1)?.parent, undefined);
  // A subagent of the subagent: its block sits in the first one's.
  model.apply({ sessionUpdate: "subagent_update", sessionId: "grandchild", title: "g" }, "child");
  model.apply({ sessionUpdate: "agent_message_chunk", content: text("deep") }, "grandchild");
  assert.deepEqual([model.get("subagent:grandchild")?.parent, model.items.at(-1)?.parent], ["subagent:child", "subagent:grandchild"]);
  // Its permission cards (live and replayed) go in its block.
  model.addPermission({ id: "perm-1", title: "Run ls", detail: "", options: [] }, "child");
  model.apply({ sessionUpdate: "tool_call", toolCallId: "t2", title: "Write", status: "completed",
    _meta: { adkAcp: { permission: { title: "Write c.py", options: [], answer: "proceed_once" } } } }, "child");
  assert.deepEqual(["perm-1", "permission-child/t2"].map((id) => model.get(id)?.parent), ["subagent:child", "subagent:child"]);
  model.reset();
  assert.ok(!model.hasSubagent("child"));
});
