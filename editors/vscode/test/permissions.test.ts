import type * as acp from "@agentclientprotocol/sdk/unstable";
import assert from "node:assert/strict";
import { test } from "node:test";
import { DiffStore, type Proposal, type UriLike } from "../src/diffDocuments";
import { PermissionBroker, type PermissionUi, type Question } from "../src/permissions";

const uris = {
  from: (c: { scheme: string; path: string; query: string }): UriLike => ({ ...c, toString: () => `${c.scheme}:${c.path}?${c.query}` }),
};

const OPTIONS: acp.PermissionOption[] = [
  { optionId: "proceed_once", name: "Allow", kind: "allow_once" },
  { optionId: "proceed_always", name: "Allow for this session", kind: "allow_always" },
  { optionId: "cancel", name: "Reject", kind: "reject_once" },
];

function fakeUi(answer?: (q: Question) => string | undefined, edited?: (p: Proposal) => string | undefined) {
  const events: string[] = [];
  const shown: Proposal[] = [];
  const metrics: [string, number][] = [];
  let pending: Question | null = null;
  const ui: PermissionUi = {
    showDiff: async (p) => {
      events.push(`diff:${p.filePath}`);
      shown.push(p);
    },
    closeDiff: async (p) => {
      events.push(`close:${p.filePath}`);
    },
    ask: async (q, signal) => {
      events.push(`ask:${q.options.map((o) => o.optionId).join(",")}`);
      if (answer) return answer(q);
      return new Promise((resolve) => signal.addEventListener("abort", () => resolve(undefined)));
    },
    pendingChanged: (current, answered) => {
      pending = current;
      if (answered) events.push(`answered:${answered.answer}${answered.modified ? " (modified)" : ""}`);
    },
    proposedText: (p) => edited?.(p),
    now: () => 1000,
    metric: (name, value) => metrics.push([name, value]),
  };
  return { ui, events, shown, metrics, pending: () => pending };
}

function editRequest(): acp.RequestPermissionRequest {
  return {
    sessionId: "s1",
    options: OPTIONS,
    toolCall: {
      toolCallId: "t1",
      title: "Edit a.txt",
      kind: "edit",
      content: [{ type: "diff", path: "/w/a.txt", oldText: "alpha\n", newText: "beta\n" }],
      locations: [{ path: "/w/a.txt" }],
    },
  };
}

test("an edit opens the diff before the question, with the agent's options; the answer is returned", async () => {
  const fake = fakeUi(() => "proceed_once");
  const store = new DiffStore(uris);
  const broker = new PermissionBroker(store, fake.ui);
  const response = await broker.request(editRequest(), 990);
  assert.deepEqual(response, { outcome: { outcome: "selected", optionId: "proceed_once" } });
  assert.deepEqual(fake.events, ["diff:/w/a.txt", "ask:proceed_once,proceed_always,cancel", "close:/w/a.txt", "answered:proceed_once"]);
  assert.deepEqual(fake.metrics, [["permission_to_diff_ms", 10]]);
  const proposal = fake.shown[0]!;
  assert.equal(proposal.isNew, false);
  assert.equal(store.size, 0); // the virtual documents are dropped after the answer
});

test("the diff documents hold the original and the proposed text while the question waits", async () => {
  const fake = fakeUi();
  const store = new DiffStore(uris);
  const broker = new PermissionBroker(store, fake.ui);
  const answered = broker.request(editRequest());
  await new Promise((r) => setImmediate(r));
  const proposal = fake.shown[0]!;
  assert.equal(store.provide(proposal.original), "alpha\n");
  assert.equal(store.provide(proposal.proposed), "beta\n");
  assert.equal(fake.pending()?.hasDiff, true);
  assert.ok(broker.answerKind(["allow_once"])); // the editor title bar's "Allow"
  assert.deepEqual((await answered).outcome, { outcome: "selected", optionId: "proceed_once" });
  assert.equal(fake.pending(), null);
});

test("cancel answers every pending question of the session 'cancelled'", async () => {
  const fake = fakeUi();
  const broker = new PermissionBroker(new DiffStore(uris), fake.ui);
  const first = broker.request(editRequest());
  const other = broker.request({ ...editRequest(), sessionId: "s2" });
  await new Promise((r) => setImmediate(r));
  assert.equal(broker.count, 2);
  assert.equal(broker.cancelAll("s1"), 1);
  assert.deepEqual((await first).outcome, { outcome: "cancelled" });
  assert.equal(broker.count, 1);
  assert.equal(broker.answer(null, "no-such-option"), false);
  assert.ok(broker.answer(null, "cancel"));
  assert.deepEqual((await other).outcome, { outcome: "selected", optionId: "cancel" });
  assert.ok(fake.events.includes("close:/w/a.txt"));
});

test("a command asks without a diff and shows the command; a late answer after cancel is ignored", async () => {
  const fake = fakeUi();
  const broker = new PermissionBroker(new DiffStore(uris), fake.ui);
  const asked = broker.request({
    sessionId: "s1",
    options: OPTIONS,
    toolCall: { toolCallId: "t2", title: "Shell", kind: "execute", rawInput: { command: "echo hi", dir_path: "." } },
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(fake.shown.length, 0);
  assert.equal(broker.current?.detail, "$ echo hi\nin .");
  broker.cancelAll();
  assert.equal(broker.answer(null, "proceed_once"), false);
  assert.deepEqual((await asked).outcome, { outcome: "cancelled" });
});

test("a new file's original is empty", () => {
  const store = new DiffStore(uris);
  const proposal = store.add("/w/new.txt", null, "fresh\n");
  assert.equal(proposal.isNew, true);
  assert.equal(store.provide(proposal.original), "");
  assert.equal(store.provide(proposal.proposed), "fresh\n");
  const again = store.add("/w/new.txt", "x", "y");
  assert.notEqual(again.proposed.toString(), proposal.proposed.toString());
});

test("a change announced ahead (tool_call) is the same proposal when asked; removal forgets it", () => {
  const store = new DiffStore(uris);
  const early = store.prepare("/w/a.txt", "a", "b");
  assert.equal(store.prepare("/w/a.txt", "a", "b"), early);
  assert.notEqual(store.prepare("/w/a.txt", "a", "c"), early);
  store.remove(early);
  assert.notEqual(store.prepare("/w/a.txt", "a", "b"), early);
});

function reviewRequest(oldText: string | null, newText: string): acp.RequestPermissionRequest {
  const request = editRequest();
  request.toolCall.content = [{ type: "diff", path: "/w/a.txt", oldText, newText }];
  return { ...request, _meta: { adkAcp: { editReview: { path: "/w/a.txt" } } } };
}

test("edit review: Allow carries what the editable proposed side holds when the user changed it", async () => {
  const store = new DiffStore(uris, () => true);
  let text = "";
  const fake = fakeUi(() => "proceed_once", () => text);
  const broker = new PermissionBroker(store, fake.ui);
  text = "BETA, mine\n";
  const response = await broker.request(reviewRequest("alpha\n", "beta\n"));
  assert.deepEqual(response, {
    outcome: { outcome: "selected", optionId: "proceed_once" },
    _meta: { adkAcp: { editReview: { path: "/w/a.txt", content: "BETA, mine\n" } } },
  });
  assert.ok(fake.events.includes("answered:proceed_once (modified)"));
  assert.equal(fake.shown[0]!.proposed.scheme, "adk-acp-review");
  assert.match(fake.shown[0]!.title, /yours to change/);

  // unchanged (an editor's line endings aside): the plain answer
  text = "beta\r\n";
  assert.deepEqual(await broker.request(reviewRequest("alpha\n", "beta\n")), { outcome: { outcome: "selected", optionId: "proceed_once" } });
});

test("edit review: a rejection, an agent that did not name the file, or a read-only proposal send no version", async () => {
  const edited = (): string => "mine\n";
  const reject = new PermissionBroker(new DiffStore(uris, () => true), fakeUi(() => "cancel", edited).ui);
  assert.deepEqual(await reject.request(reviewRequest("a\n", "b\n")), { outcome: { outcome: "selected", optionId: "cancel" } });
  const unnamed = new PermissionBroker(new DiffStore(uris, () => true), fakeUi(() => "proceed_once", edited).ui);
  assert.deepEqual(await unnamed.request(editRequest()), { outcome: { outcome: "selected", optionId: "proceed_once" } });
  const readOnly = new PermissionBroker(new DiffStore(uris, () => false), fakeUi(() => "proceed_once", edited).ui);
  assert.deepEqual(await readOnly.request(reviewRequest("a\n", "b\n")), { outcome: { outcome: "selected", optionId: "proceed_once" } });
});

test("edit review: a new file's version, and the saved proposed side is the user's until the answer", async () => {
  const store = new DiffStore(uris, () => true);
  const proposal = store.prepare("/w/a.txt", null, "new\n");
  assert.equal(proposal.isNew, true);
  assert.ok(store.write(proposal.proposed, "renewed\n"));
  assert.equal(store.provide(proposal.proposed), "renewed\n");
  assert.equal(store.agentText(proposal, "proposed"), "new\n");
  assert.equal(store.write(proposal.original, "x"), false); // the original side is not writable
  const broker = new PermissionBroker(store, fakeUi(() => "proceed_once", (p) => store.provide(p.proposed)).ui);
  const response = await broker.request(reviewRequest(null, "new\n"));
  assert.equal((response._meta as { adkAcp: { editReview: { content: string } } }).adkAcp.editReview.content, "renewed\n");
  assert.equal(store.size, 0);
  assert.equal(store.write(proposal.proposed, "late"), false);
});
