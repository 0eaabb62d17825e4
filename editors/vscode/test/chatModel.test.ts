import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatModel, diffStat, type ToolItem } from "../src/chatModel";

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
