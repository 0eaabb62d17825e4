// The chat's first-open input (openingInput.ts) on a fake of its VS Code side: the
// targeted cases, then every ordering of the user's and the chat's events with the
// invariants that nothing typed is lost or sent twice and text never moves while the
// input is open.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GRACE_MS, OpeningInput, type OpeningEvent, type OpeningHost } from "../src/openingInput";

interface Fake {
  machine: OpeningInput;
  /** The native input: shown (open), what it holds, and whether our close is on its way. */
  box: { open: boolean; value: string; closing: boolean; ready: boolean };
  timers: { ms: number; run: () => void; cancelled: boolean }[];
  sent: string[];
  moved: { text: string; focus: boolean }[];
  focused: number;
  shown: number;
  notes: OpeningEvent[];
  /** Calls that found the box open when they moved text (must stay empty). */
  movedWhileOpen: string[];
  enabled: boolean;
}

function rig(enabled = true): Fake {
  const f = {
    box: { open: false, value: "", closing: false, ready: false },
    timers: [],
    sent: [],
    moved: [],
    focused: 0,
    shown: 0,
    notes: [],
    movedWhileOpen: [],
    enabled,
  } as unknown as Fake;
  const host: OpeningHost = {
    enabled: () => f.enabled,
    after: (ms, run) => {
      const timer = { ms, run, cancelled: false };
      f.timers.push(timer);
      return () => void (timer.cancelled = true);
    },
    showInput: () => {
      assert.equal(f.box.open, false, "shown twice");
      f.box = { open: true, value: "", closing: false, ready: false };
      f.shown++;
    },
    inputReady: () => void (f.box.ready = true),
    closeInput: () => {
      if (f.box.open) f.box.closing = true; // VS Code hides it and says so later (hide())
    },
    inputValue: () => f.box.value,
    send: (text) => void f.sent.push(text),
    moveDraft: (text, focus) => {
      if (f.box.open && !f.box.closing) f.movedWhileOpen.push(text);
      f.moved.push({ text, focus });
    },
    focusChat: () => void f.focused++,
    note: (event) => void f.notes.push(event),
  };
  f.machine = new OpeningInput(host);
  return f;
}

/** The grace timer fires (if it is still set). */
function graceOver(f: Fake): void {
  for (const t of f.timers.splice(0)) if (!t.cancelled) t.run();
}

/** VS Code delivers the hide of a box we closed. */
function hideDelivered(f: Fake): void {
  if (f.box.open && f.box.closing) {
    f.box.open = false;
    f.machine.hidden();
  }
}

/** The user hides the box: Escape, or a click elsewhere (blur): the same event for the extension. */
function userHides(f: Fake): void {
  if (f.box.open && !f.box.closing) {
    f.box.open = false;
    f.machine.hidden();
  }
}

function type(f: Fake, text: string): void {
  if (f.box.open) f.box.value += text;
}

test("a slow webview: the input shows after the grace, Enter sends through the chat's path and focuses the chat", () => {
  const f = rig();
  f.machine.resolved(false);
  assert.equal(f.timers[0]!.ms, GRACE_MS);
  assert.equal(f.shown, 0);
  graceOver(f);
  assert.equal(f.shown, 1);
  assert.equal(f.machine.state, "shown");
  type(f, "  explain a.txt ");
  f.machine.accepted();
  hideDelivered(f);
  assert.deepEqual(f.sent, ["explain a.txt"]);
  assert.deepEqual(f.moved, []);
  assert.equal(f.focused, 1);
  assert.equal(f.box.open, false);
  f.machine.ready(); // the chat draws the prompt from its snapshot: nothing more to do here
  assert.deepEqual(f.sent, ["explain a.txt"]);
  assert.equal(f.machine.state, "done");
});

test("a fast webview (ready within the grace): no input at all", () => {
  const f = rig();
  f.machine.resolved(false);
  f.machine.ready();
  assert.equal(f.timers[0]!.cancelled, true);
  graceOver(f);
  assert.equal(f.shown, 0);
  assert.equal(f.machine.state, "done");
});

test("off by the setting, or a view the workbench restores (no click): no input", () => {
  for (const [enabled, restored] of [[false, false], [true, true]] as const) {
    const f = rig(enabled);
    f.machine.resolved(restored);
    graceOver(f);
    assert.equal(f.shown, 0);
    assert.deepEqual(f.notes, ["skipped"]);
  }
});

test("ready with nothing typed: the input closes by itself and the chat's input takes the focus", () => {
  const f = rig();
  f.machine.resolved(false);
  graceOver(f);
  type(f, "   ");
  f.machine.ready();
  assert.equal(f.box.closing, true);
  assert.equal(f.focused, 1);
  hideDelivered(f);
  assert.deepEqual(f.moved, []);
  assert.deepEqual(f.notes, ["shown", "closed-empty"]);
});

test("ready with a draft: the input stays open (the text never moves under the user's fingers)", () => {
  const f = rig();
  f.machine.resolved(false);
  graceOver(f);
  type(f, "half a que");
  f.machine.ready();
  assert.equal(f.box.open && !f.box.closing, true);
  assert.equal(f.box.ready, true);
  type(f, "stion");
  f.machine.accepted();
  hideDelivered(f);
  assert.deepEqual(f.sent, ["half a question"]);
});

test("Escape or a click elsewhere moves the draft (as typed) into the chat's input and focuses it", () => {
  for (const readyFirst of [false, true]) {
    const f = rig();
    f.machine.resolved(false);
    graceOver(f);
    type(f, "a draft ");
    if (readyFirst) f.machine.ready();
    userHides(f);
    assert.deepEqual(f.moved, [{ text: "a draft ", focus: true }]);
    assert.deepEqual(f.sent, []);
    f.machine.ready();
    assert.equal(f.moved.length, 1);
  }
});

test("Escape with nothing typed: nothing moves, the focus is left where the user put it", () => {
  const f = rig();
  f.machine.resolved(false);
  graceOver(f);
  userHides(f);
  f.machine.ready();
  assert.deepEqual(f.moved, []);
  assert.equal(f.focused, 0);
  assert.deepEqual(f.notes, ["shown", "dismissed"]);
});

test("the view hidden before the chat took over: the draft goes into the chat, unfocused", () => {
  const f = rig();
  f.machine.resolved(false);
  graceOver(f);
  type(f, "keep me");
  f.machine.viewHidden();
  hideDelivered(f);
  assert.deepEqual(f.moved, [{ text: "keep me", focus: false }]);
  assert.equal(f.focused, 0);
  const early = rig();
  early.machine.resolved(false);
  early.machine.viewHidden();
  graceOver(early);
  assert.equal(early.shown, 0);
});

test("keys typed after our close but before VS Code hid the input come with its hide event", () => {
  const f = rig();
  f.machine.resolved(false);
  graceOver(f);
  f.machine.ready(); // empty: closed on our side ...
  f.box.value = "q"; // ... but a key got there first
  hideDelivered(f);
  assert.deepEqual(f.moved, [{ text: "q", focus: true }]);
  const g = rig();
  g.machine.resolved(false);
  graceOver(g);
  type(g, "sent");
  g.machine.accepted();
  g.box.value = "sent and more";
  hideDelivered(g);
  assert.deepEqual(g.sent, ["sent"]);
  assert.deepEqual(g.moved, [{ text: " and more", focus: true }]);
});

test("Enter after our close but before VS Code hid the input sends what was typed, once", () => {
  const f = rig();
  f.machine.resolved(false);
  graceOver(f);
  f.machine.ready(); // looked empty here: closed on our side ...
  f.box.value = "a prompt"; // ... the user's keys and Enter got there first
  f.machine.accepted();
  hideDelivered(f);
  assert.deepEqual(f.sent, ["a prompt"]);
  assert.deepEqual(f.moved, []);
});

test("a mention on its way to the chat's composer: the input steps aside, its draft moved", () => {
  const f = rig();
  f.machine.resolved(false);
  graceOver(f);
  type(f, "look at");
  f.machine.composerWanted();
  hideDelivered(f);
  assert.deepEqual(f.moved, [{ text: "look at", focus: true }]);
  assert.deepEqual(f.sent, []);
});

test("a new webview (the view made again): a new first open", () => {
  const f = rig();
  f.machine.resolved(false);
  f.machine.ready();
  f.machine.resolved(false);
  graceOver(f);
  assert.equal(f.shown, 1);
});

test("the focus command before the resolve: the input at once (no grace), the resolve keeps it, even as a restore", () => {
  for (const restored of [false, true]) {
    const f = rig();
    assert.equal(f.machine.commanded(false), true);
    assert.equal(f.shown, 1);
    assert.equal(f.timers.length, 0);
    type(f, "early words");
    f.machine.resolved(restored);
    graceOver(f);
    assert.equal(f.shown, 1);
    assert.equal(f.box.open && !f.box.closing, true);
    assert.equal(f.machine.commanded(true), true); // pressed again: the input keeps the typing
    f.machine.ready();
    f.machine.accepted();
    hideDelivered(f);
    assert.deepEqual(f.sent, ["early words"]);
    assert.deepEqual(f.notes, ["shown", "kept-draft", "sent"]);
  }
});

test("the focus command: Escape before the resolve moves the draft; the resolve then shows no second input", () => {
  const f = rig();
  f.machine.commanded(false);
  type(f, "a draft");
  userHides(f);
  assert.deepEqual(f.moved, [{ text: "a draft", focus: true }]);
  assert.equal(f.machine.commanded(false), false); // the focus the move asks for: no new input
  f.machine.resolved(false);
  graceOver(f);
  f.machine.ready();
  assert.equal(f.shown, 1);
});

test("the focus command after the resolve: within the grace it shows at once; a ready, kept or restored chat gets none", () => {
  const f = rig();
  f.machine.resolved(false);
  assert.equal(f.machine.commanded(true), true);
  assert.equal(f.timers[0]!.cancelled, true);
  assert.equal(f.shown, 1);
  f.machine.ready();
  hideDelivered(f);
  assert.equal(f.machine.commanded(true), false);
  for (const restored of [false, true]) {
    const g = rig();
    g.machine.resolved(restored);
    if (!restored) g.machine.ready();
    assert.equal(g.machine.commanded(true), false);
    assert.equal(g.shown, 0);
  }
  const off = rig(false);
  assert.equal(off.machine.commanded(false), false);
  off.machine.resolved(false);
  assert.equal(off.shown, 0);
  assert.deepEqual(off.notes, ["skipped"]);
});

/** The user's part of an ordering: returns what this step typed. */
function userStep(f: Fake, step: string): string {
  const open = f.box.open && !f.box.closing;
  if (step === "type" && open) type(f, "word");
  if (step === "enter" && open) f.machine.accepted();
  if (step === "escape" || step === "blur") userHides(f);
  return step === "type" && open ? "word" : "";
}

/** Nothing typed is lost or delivered twice (sent, moved, or still in the open input), and
 * no text moved while the input was open; returns what the open input holds. */
function nothingLost(f: Fake, typed: string, context: string): string {
  const open = f.box.open && !f.box.closing ? f.box.value : "";
  const delivered = [...f.sent, ...f.moved.map((m) => m.text)].join("") + open;
  assert.equal(delivered, typed, `typed ${JSON.stringify(typed)}, delivered ${JSON.stringify(delivered)}: ${context}`);
  assert.deepEqual(f.movedWhileOpen, [], context);
  return open;
}

type Step = "grace" | "ready" | "type" | "enter" | "escape" | "blur" | "viewHidden";
const STEPS: Step[] = ["ready", "type", "enter", "escape", "blur", "viewHidden"];

function* orderings<T>(items: T[]): Generator<T[]> {
  if (items.length <= 1) {
    yield items;
    return;
  }
  for (let i = 0; i < items.length; i++) {
    for (const rest of orderings([...items.slice(0, i), ...items.slice(i + 1)])) yield [items[i]!, ...rest];
  }
}

test("every ordering of ready, typing, Enter, Escape, blur and the view hidden, before or after the grace", () => {
  let runs = 0;
  for (const order of orderings(STEPS)) {
    // The grace may end before any of the six events, or after any of them.
    for (let graceAt = 0; graceAt <= order.length; graceAt++) {
      const steps: Step[] = [...order.slice(0, graceAt), "grace", ...order.slice(graceAt)];
      const f = rig();
      f.machine.resolved(false);
      let typed = "";
      let readyBeforeShown = false;
      for (const step of steps) {
        if (step === "grace") graceOver(f);
        if (step === "ready") {
          readyBeforeShown = f.shown === 0;
          f.machine.ready();
        }
        typed += userStep(f, step);
        if (step === "viewHidden") f.machine.viewHidden();
        hideDelivered(f);
      }
      const context = steps.join(" → ");
      if (readyBeforeShown) assert.equal(f.shown, 0, `ready within the grace, yet shown: ${context}`);
      assert.ok(f.shown <= 1, context);
      const open = nothingLost(f, typed, context);
      // Once the chat and the user are both done with it, the input is closed.
      if (steps.indexOf("viewHidden") >= 0 && f.machine.state === "done") assert.equal(open, "", context);
      // The chat takes the focus only when the user was in the input: Enter, a moved
      // draft (focus asked for), or the input closed empty by the chat's readiness.
      if (f.shown === 0) assert.equal(f.focused + f.moved.length, 0, context);
      runs++;
    }
  }
  assert.equal(runs, 720 * 7);
});

type CommandStep = "resolve" | "grace" | "ready" | "type" | "enter" | "escape" | "blur";

test("every ordering of the focus command, the resolve, ready, typing, Enter, Escape and blur (the grace anywhere)", () => {
  let runs = 0;
  const events: CommandStep[] = ["resolve", "ready", "type", "enter", "escape", "blur"];
  for (const order of orderings(events)) {
    // The command before everything, or after any event; the grace timer after any point.
    for (let commandAt = 0; commandAt <= order.length; commandAt++) {
      for (let graceAt = 0; graceAt <= order.length + 1; graceAt++) {
        const withCommand: (CommandStep | "command")[] = [...order.slice(0, commandAt), "command", ...order.slice(commandAt)];
        const steps = [...withCommand.slice(0, graceAt), "grace" as const, ...withCommand.slice(graceAt)];
        const f = rig();
        let typed = "";
        let resolved = false;
        let readyBefore = false;
        let commandShowed = false;
        for (const step of steps) {
          if (step === "command") {
            const shownBefore = f.shown;
            const answer = f.machine.commanded(resolved);
            commandShowed = f.shown > shownBefore;
            if (!resolved && !readyBefore) assert.equal(f.shown, 1, `not shown at once: ${steps.join(" → ")}`);
            if (answer) assert.equal(f.box.open && !f.box.closing, true, steps.join(" → "));
          }
          if (step === "resolve") {
            resolved = true;
            f.machine.resolved(false);
          }
          if (step === "grace") graceOver(f);
          if (step === "ready") {
            readyBefore = true;
            f.machine.ready();
          }
          typed += userStep(f, step);
          hideDelivered(f);
        }
        const context = steps.join(" → ");
        assert.ok(f.shown <= 1, `two inputs: ${context}`);
        nothingLost(f, typed, context);
        // The command before the resolve owns this open: no grace timer is ever set.
        if (steps.indexOf("command") < steps.indexOf("resolve")) assert.equal(f.timers.length, 0, context);
        // A chat that was ready before the command never gets the input from it.
        if (steps.indexOf("ready") < steps.indexOf("command") && steps.indexOf("resolve") < steps.indexOf("ready")) {
          assert.equal(commandShowed, false, context);
        }
        if (f.shown === 0) assert.equal(f.focused + f.moved.length, 0, context);
        runs++;
      }
    }
  }
  assert.equal(runs, 720 * 7 * 8);
});
