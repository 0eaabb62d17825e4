// The webview's item renderer (media/items.js) on a small fake DOM: compactions and
// subagent sessions are collapsible blocks, a subagent's items are drawn inside its
// block (and stay when the block is redrawn), plans show Markdown or open their file.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import { runInNewContext } from "node:vm";
import type { Item } from "../src/chatModel";
import type { FromView, MarkdownApi, TranscriptEntry } from "../src/messages";

const media = (name: string): string => join(__dirname, "..", "..", "media", name);
const md = createRequire(__filename)(media("markdown.js")) as MarkdownApi;

/** Just the DOM items.js uses: elements, classes, text, children, `:scope > tag.class` lookups, clicks. */
class FakeElement {
  children: FakeElement[] = [];
  parentNode: FakeElement | null = null;
  className = "";
  id = "";
  open = false;
  href = "";
  title = "";
  dataset: Record<string, string> = {};
  innerHTML = "";
  private text = "";
  private readonly listeners = new Map<string, ((event: { preventDefault(): void }) => void)[]>();
  constructor(readonly tagName: string) {}
  get textContent(): string {
    return this.text + this.children.map((c) => c.textContent).join("");
  }
  set textContent(value: string) {
    this.text = value;
    this.innerHTML = "";
    for (const child of this.children) child.parentNode = null;
    this.children = [];
  }
  appendChild(child: FakeElement): FakeElement {
    child.parentNode = this;
    this.children.push(child);
    return child;
  }
  remove(): void {
    if (this.parentNode) this.parentNode.children.splice(this.parentNode.children.indexOf(this), 1);
    this.parentNode = null;
  }
  setAttribute(name: string, value: string): void {
    this.dataset[`attr:${name}`] = value;
  }
  addEventListener(type: string, listener: (event: { preventDefault(): void }) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  click(): void {
    for (const listener of this.listeners.get("click") ?? []) listener({ preventDefault: () => undefined });
  }
  querySelector(selector: string): FakeElement | null {
    const match = /^:scope > (\w*)(?:\.([\w-]+))?$/.exec(selector);
    if (!match) throw new Error(`the fake DOM does not know ${selector}`);
    const [, tag, cls] = match;
    return this.children.find((c) => (!tag || c.tagName === tag) && (!cls || c.className.split(" ").includes(cls))) ?? null;
  }
  /** The first descendant with this class. */
  find(cls: string): FakeElement | undefined {
    for (const child of this.children) {
      if (child.className.split(" ").includes(cls)) return child;
      const deeper = child.find(cls);
      if (deeper) return deeper;
    }
    return undefined;
  }
}

interface Drawn {
  draw(entry: TranscriptEntry): void;
  create(item: Item, parent?: FakeElement): FakeElement;
}

function renderer(): { items: Drawn; transcript: FakeElement; posted: FromView[] } {
  const window: { AdkItems?: { createItems(v: unknown, m: MarkdownApi, t: FakeElement): Drawn } } = {};
  const document = { createElement: (tag: string) => new FakeElement(tag) };
  runInNewContext(readFileSync(media("items.js"), "utf8"), { window, document });
  const transcript = new FakeElement("main");
  const posted: FromView[] = [];
  // Messages are copied out of the script's realm (as postMessage would).
  const items = window.AdkItems!.createItems({ postMessage: (m: FromView) => posted.push(JSON.parse(JSON.stringify(m))) }, md, transcript);
  return { items, transcript, posted };
}

/** Creates (in its parent's block, if any) and draws an item, as chat.js does. */
function show(r: ReturnType<typeof renderer>, entries: Map<string, TranscriptEntry>, item: Item): FakeElement {
  const known = entries.get(item.id);
  const entry: TranscriptEntry = known ?? { item };
  entry.item = item;
  if (!known) {
    const parent = item.parent ? (entries.get(item.parent)?.el as unknown as FakeElement | undefined) : undefined;
    entry.el = r.items.create(item, parent) as unknown as HTMLElement;
    entries.set(item.id, entry);
  }
  r.items.draw(entry);
  return entry.el as unknown as FakeElement;
}

test("a compaction: a collapsible line that says what happened, the summary inside", () => {
  const r = renderer();
  const entries = new Map<string, TranscriptEntry>();
  const node = show(r, entries, { kind: "compaction", id: "compaction:c1", status: "in_progress", text: "" });
  assert.equal(node.tagName, "details");
  assert.equal(node.querySelector(":scope > summary")?.textContent, "Compacting the conversation…");
  show(r, entries, { kind: "compaction", id: "compaction:c1", status: "completed", text: "**goal**: counted" });
  assert.equal(node.querySelector(":scope > summary")?.textContent, "Conversation compacted");
  assert.equal(node.querySelector(":scope > div.body")?.innerHTML, md.render("**goal**: counted"));
  assert.equal(node.children.length, 2); // redrawn in place, not added to
  show(r, entries, { kind: "compaction", id: "compaction:c1", status: "failed", text: "", error: "quota" });
  assert.equal(node.querySelector(":scope > summary")?.textContent, "Compacting the conversation failed: quota");
});

test("a subagent: a block open while it works; its items are drawn inside and stay when it is redrawn", () => {
  const r = renderer();
  const entries = new Map<string, TranscriptEntry>();
  const sub: Item = { kind: "subagent", id: "subagent:c", sessionId: "c", title: "investigator", description: "Find the parser", state: "running" };
  const block = show(r, entries, sub);
  assert.ok(block.tagName === "details" && block.open);
  assert.equal(block.querySelector(":scope > summary")?.textContent, "investigatorFind the parserworking");
  show(r, entries, { kind: "agent", id: "a1", parent: "subagent:c", text: "Looking *around*" });
  show(r, entries, { kind: "tool", id: "c/t1", parent: "subagent:c", title: "Read a.py", toolKind: "read", status: "completed",
    locations: [], diffs: [], text: "", terminalIds: [] });
  show(r, entries, { kind: "permission", id: "perm-1", parent: "subagent:c", title: "Run ls", detail: "$ ls",
    options: [{ optionId: "y", name: "Allow", kind: "allow_once" }] });
  show(r, entries, { ...sub, state: "idle", stopReason: "end_turn" });
  const body = block.querySelector(":scope > div.body")!;
  assert.deepEqual(body.children.map((c) => c.className), ["item agent", "item tool", "item permission"]);
  assert.equal(block.querySelector(":scope > summary")?.textContent, "investigatorFind the parserdone");
  assert.deepEqual(r.transcript.children.map((c) => c.id), ["item-subagent:c"]);
  // A card's button answers the agent from inside the block.
  body.children[2]!.find("options")!.children[0]!.click();
  assert.deepEqual(r.posted, [{ type: "permission", key: "perm-1", optionId: "y" }]);
  // Answered with the user's changes to the edit: the card says so.
  const changed = show(r, entries, { kind: "permission", id: "perm-2", title: "Edit a.py", detail: "",
    options: [{ optionId: "y", name: "Allow", kind: "allow_once" }], answered: "y", modified: true });
  assert.equal(changed.find("answer")?.textContent, "Answer: Allowed with your changes");
  // A replayed subagent that is done starts closed.
  const replayed = show(renderer(), new Map(), { ...sub, id: "subagent:d", state: "idle" });
  assert.equal(replayed.open, false);
});

test("plans: Markdown rendered, a file plan opens its file, entries listed", () => {
  const r = renderer();
  const entries = new Map<string, TranscriptEntry>();
  const markdown = show(r, entries, { kind: "plan", id: "plan:p1", planId: "p1", entries: [], markdown: "1. read\n2. **fix**" });
  assert.equal(markdown.querySelector(":scope > div.body")?.innerHTML, md.render("1. read\n2. **fix**"));
  const file = show(r, entries, { kind: "plan", id: "plan:p2", planId: "p2", entries: [], uri: "file:///w/PLAN%20one.md" });
  const link = file.querySelector(":scope > a")!;
  assert.equal(link.textContent, " PLAN one.md");
  link.click();
  assert.deepEqual(r.posted, [{ type: "open", path: "/w/PLAN one.md", line: null }]);
  const list = show(r, entries, { kind: "plan", id: "plan:p3", planId: "p3", entries: [{ content: "read", priority: "high", status: "completed" }] });
  assert.equal(list.querySelector(":scope > ul")?.children[0]?.className, "completed");
});
