// The approvals UI (diff editor, notification, chat card, title-bar buttons) on a fake VS Code side.

import assert from "node:assert/strict";
import { test } from "node:test";
import type * as acp from "@agentclientprotocol/sdk/unstable";
import { Approvals, type ApprovalsHost, type OptionPick } from "../src/approvals";
import { DiffStore, type UriLike } from "../src/diffDocuments";
import { fakeSurface, recordMetrics, until, type FakeSurface } from "./fakes";

const uris = {
  from: (c: { scheme: string; path: string; query: string }): UriLike => ({ ...c, toString: () => `${c.scheme}:${c.path}?${c.query}` }),
};

const OPTIONS: acp.PermissionOption[] = [
  { optionId: "yes", name: "Allow", kind: "allow_once" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
];

const editRequest = (sessionId = "s"): acp.RequestPermissionRequest => ({
  sessionId,
  options: OPTIONS,
  toolCall: {
    toolCallId: "t1",
    title: "Edit a.txt",
    content: [{ type: "diff", path: "/w/a.txt", oldText: "a\n", newText: "b\n" }],
  },
});

interface Rig {
  approvals: Approvals;
  fake: FakeSurface;
  diffs: DiffStore;
  calls: string[];
  asked: { message: string; buttons: string[]; answer: (name: string | undefined) => void }[];
  session: string | null;
  running: boolean;
  pick: (picks: OptionPick[]) => OptionPick | undefined;
}

function rig(): Rig {
  const fake = fakeSurface();
  const diffs = new DiffStore(uris);
  const r = { fake, diffs, calls: [], asked: [], session: "s", running: true, pick: () => undefined } as unknown as Rig;
  const host: ApprovalsHost = {
    openDiff: async (p) => void r.calls.push(`diff ${p.filePath}`),
    closeDiffTabs: async (proposed) => void r.calls.push(`close ${proposed.scheme}`),
    setContext: (key, value) => void r.calls.push(`${key}=${value}`),
    showInfo: (message, buttons) =>
      new Promise((resolve) => {
        r.asked.push({ message, buttons, answer: resolve });
      }),
    hideToasts: () => void r.calls.push("hideToasts"),
    pickOption: async (picks) => r.pick(picks),
    preload: (uri) => void r.calls.push(`preload ${uri.scheme}`),
    documentText: () => undefined,
    metric: recordMetrics().metric,
    now: () => 0,
  };
  r.approvals = new Approvals(host, fake.surface, diffs, (id) => id === r.session || r.fake.surface.model.hasSubagent(id), () => r.running);
  return r;
}

test("an edit: the diff first, then the question; the notification's answer wins, the diff closes", async () => {
  const r = rig();
  const answered = r.approvals.request(editRequest(), 0);
  await until(() => r.asked.length === 1, "the notification");
  assert.deepEqual(r.calls, ["diff /w/a.txt", "adkAcp.pendingDiff=true", "adkAcp.pendingDiff=true"]);
  assert.equal(r.asked[0]!.message, "adk-acp: Edit a.txt (see the diff editor)");
  assert.deepEqual(r.asked[0]!.buttons, ["Allow", "Reject"]);
  const card = r.fake.surface.model.items.find((i) => i.kind === "permission");
  assert.ok(card && card.kind === "permission" && card.title === "Edit a.txt" && !card.answered);
  assert.match(r.fake.status.at(-1)!, /waiting for approval/);
  r.asked[0]!.answer("Allow");
  assert.deepEqual(await answered, { outcome: { outcome: "selected", optionId: "yes" } });
  assert.ok(r.calls.includes("close adk-acp-proposed"));
  assert.equal(r.calls.at(-1), "adkAcp.pendingDiff=false");
  const after = r.fake.surface.model.get(card.id);
  assert.ok(after && after.kind === "permission" && after.answered === "yes");
  assert.match(r.fake.status.at(-1)!, /· thinking$/);
  assert.equal(r.diffs.size, 0);
});

test("answered in the chat card or by the title bar: the notification is put away", async () => {
  const r = rig();
  const first = r.approvals.request(editRequest(), 0);
  await until(() => r.asked.length === 1, "the first question");
  const key = r.fake.surface.model.items.find((i) => i.kind === "permission")!.id;
  r.approvals.answer(key, "no");
  assert.deepEqual(await first, { outcome: { outcome: "selected", optionId: "no" } });
  await until(() => r.calls.includes("hideToasts"), "the toasts put away");
  const second = r.approvals.request(editRequest(), 0);
  await until(() => r.asked.length === 2, "the second question");
  r.approvals.answerFromEditor(["reject_once", "reject_always"]);
  assert.deepEqual(await second, { outcome: { outcome: "selected", optionId: "no" } });
  r.approvals.answerFromEditor(["allow_once"]);
  assert.equal(r.asked.at(-1)!.message, "adk-acp is not waiting for an answer.");
});

test("Answer the Agent…: every option in a quick pick", async () => {
  const r = rig();
  await r.approvals.chooseOption(); // nothing pending: nothing asked
  const answered = r.approvals.request(editRequest(), 0);
  await until(() => r.asked.length === 1, "the question");
  let offered: OptionPick[] = [];
  r.pick = (picks) => {
    offered = picks;
    return picks[1];
  };
  await r.approvals.chooseOption();
  assert.deepEqual(offered, [
    { label: "Allow", description: "allow once", optionId: "yes" },
    { label: "Reject", description: "reject once", optionId: "no" },
  ]);
  assert.deepEqual(await answered, { outcome: { outcome: "selected", optionId: "no" } });
});

test("a question of another session is cancelled; cancelAll voids the pending ones", async () => {
  const r = rig();
  assert.deepEqual(await r.approvals.request(editRequest("other"), 0), { outcome: { outcome: "cancelled" } });
  assert.equal(r.asked.length, 0);
  const pending = r.approvals.request(editRequest(), 0);
  await until(() => r.asked.length === 1, "the question");
  assert.equal(r.approvals.cancelAll("s"), 1);
  assert.deepEqual(await pending, { outcome: { outcome: "cancelled" } });
});

test("a tool call's diff is loaded ahead of its question and dropped when the call ends", () => {
  const r = rig();
  const diff: acp.ToolCallContent = { type: "diff", path: "/w/b.txt", oldText: null, newText: "new\n" };
  r.approvals.toolUpdate({ toolCallId: "t9", title: "Write b.txt", content: [diff] });
  r.approvals.toolUpdate({ toolCallId: "t9", content: [diff] });
  assert.deepEqual(r.calls, ["preload adk-acp-original", "preload adk-acp-proposed"]);
  assert.equal(r.diffs.size, 1, "one proposal, prepared once");
  r.approvals.toolUpdate({ toolCallId: "t9", status: "completed" });
  assert.equal(r.diffs.size, 0);
});

test("a subagent's question is asked, its card sits in the subagent's block; cancelling the session cancels it", async () => {
  const r = rig();
  r.fake.surface.model.apply({ sessionUpdate: "subagent_update", sessionId: "child", title: "helper" });
  const pending = r.approvals.request(editRequest("child"), 0);
  await until(() => r.asked.length === 1, "the subagent's question");
  const card = r.fake.surface.model.items.find((i) => i.kind === "permission");
  assert.equal(card?.parent, "subagent:child");
  assert.equal(r.approvals.cancelAll("s"), 1);
  assert.deepEqual(await pending, { outcome: { outcome: "cancelled" } });
  assert.ok(card?.kind === "permission" && card.answered === "cancelled");
});
