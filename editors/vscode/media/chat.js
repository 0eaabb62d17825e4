// @ts-check
// The chat view's script: follows the host's operations (upsert / append / state) into
// the transcript (drawn by items.js, streamed text once per frame), the header (mode
// and model pickers, usage, state) and the turn's Stop; the composer is composer.js.
(function () {
  "use strict";
  const vscode = acquireVsCodeApi();
  const el = window.AdkItems.el;
  /** An element of the page's fixed skeleton (chatView.ts writes it). */
  const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const transcript = $("transcript");
  const stopButton = $("stop");
  const sendButton = /** @type {HTMLButtonElement} */ ($("send"));
  const stateEl = $("state");
  const { draw, create } = window.AdkItems.createItems(vscode, window.AdkMarkdown, transcript);
  const composer = window.AdkComposer.createComposer(vscode, { commands: () => header.commands, running: () => running });
  const input = composer.input;

  /** The text of an item that has one (the transcript only streams into those). */
  const textOf = (/** @type {Webview.Item} */ item) => /** @type {{ text: string }} */ (item).text;

  const store = window.AdkTranscript.createTranscript({
    reset: () => {
      dirty.clear();
      transcript.textContent = "";
    },
    created: (entry) => {
      const parent = entry.item.parent ? store.get(entry.item.parent) : undefined;
      entry.el = create(entry.item, parent && parent.el);
    },
    changed: (entry) => upsert(entry),
    appended: (entry) => schedule(entry.item.id),
    removed: (entry) => {
      dirty.delete(entry.item.id);
      if (entry.el) entry.el.remove();
    },
    state: (state) => {
      header = Object.assign({}, header, state);
      renderHeader();
    },
  });
  /** @type {Set<string>} */
  const dirty = new Set();
  let frame = 0;
  /** @type {Webview.HeaderState} */
  let header = { configOptions: [], commands: [], usage: null, title: null, busy: false, status: "idle" };
  let running = false;
  /** @type {string | null} */
  let pendingRendered = null;
  /** @type {{ receivedAt?: number, sentAt?: number }} */
  let turnTiming = {};

  function nearBottom() {
    return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  }

  /** @param {string} id */
  function schedule(id) {
    dirty.add(id);
    if (!frame) frame = requestAnimationFrame(flush);
  }

  function flush() {
    frame = 0;
    const stick = nearBottom();
    const drawn = [];
    for (const id of dirty) {
      const entry = store.get(id);
      if (entry) {
        draw(entry);
        drawn.push(entry);
      }
    }
    const now = Date.now();
    for (const entry of drawn) {
      entry.drawnAt = now;
      entry.drawnLength = textOf(entry.item).length;
    }
    dirty.clear();
    if (stick) transcript.scrollTop = transcript.scrollHeight;
    if (pendingRendered) checkRendered();
  }

  function checkRendered() {
    if (pendingRendered === null) return;
    const entry = store.get(pendingRendered);
    if (!entry || dirty.has(pendingRendered)) return;
    // The answer became fully visible when its final text was drawn, which may be before
    // the webview learnt (from the turn's end) that it was final.
    const complete = entry.drawnLength === textOf(entry.item).length && entry.drawnAt;
    vscode.postMessage({ type: "rendered", id: pendingRendered, length: textOf(entry.item).length, at: complete || Date.now(),
      receivedAt: turnTiming.receivedAt, sentAt: turnTiming.sentAt });
    pendingRendered = null;
  }

  /** @param {Webview.TranscriptEntry} entry */
  function upsert(entry) {
    const item = entry.item;
    if (item.kind === "agent" || item.kind === "thought") schedule(item.id);
    else {
      const stick = nearBottom();
      draw(entry);
      if (stick) transcript.scrollTop = transcript.scrollHeight;
      if (item.kind === "permission" && !item.answered) {
        const first = /** @type {HTMLElement} */ (entry.el).querySelector("button");
        if (first && document.activeElement !== input) first.focus();
      }
    }
  }

  function renderHeader() {
    const pickers = $("pickers");
    pickers.textContent = "";
    for (const option of header.configOptions) {
      const label = el("label", "", option.name);
      const select = el("select");
      select.id = "config-" + option.id;
      select.dataset.category = option.category;
      select.setAttribute("aria-label", option.name);
      for (const value of option.options) {
        const opt = el("option", "", value.name);
        opt.value = value.value;
        if (value.description) opt.title = value.description;
        if (value.value === option.currentValue) opt.selected = true;
        select.appendChild(opt);
      }
      select.addEventListener("change", () => vscode.postMessage({ type: "config", id: option.id, value: select.value }));
      label.appendChild(select);
      pickers.appendChild(label);
    }
    const usage = $("usage");
    if (header.usage && header.usage.size) {
      const pct = Math.round((100 * header.usage.used) / header.usage.size);
      usage.textContent = header.usage.used.toLocaleString() + " / " + header.usage.size.toLocaleString() + " tokens (" + pct + "%)" + (header.usage.cost ? " · " + header.usage.cost : "");
    } else {
      usage.textContent = "";
    }
    stateEl.textContent = header.status;
    document.body.dataset.status = header.status;
  }

  /** @param {boolean} value */
  function setRunning(value) {
    running = value;
    stopButton.hidden = !value;
    sendButton.disabled = value;
    document.body.dataset.running = String(value);
  }

  stopButton.addEventListener("click", () => vscode.postMessage({ type: "cancel" }));
  $("new").addEventListener("click", () => vscode.postMessage({ type: "newChat" }));
  $("history").addEventListener("click", () => vscode.postMessage({ type: "history" }));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && running && event.target !== input) vscode.postMessage({ type: "cancel" });
  });

  window.addEventListener("message", (/** @type {MessageEvent<Webview.ToView>} */ event) => {
    const message = event.data;
    switch (message.type) {
      case "ops":
        store.apply(message.ops);
        break;
      case "turn":
        setRunning(message.running);
        turnTiming = { receivedAt: Date.now(), sentAt: message.sentAt };
        if (!message.running && message.lastAgentId) {
          // The answer is complete: draw what is left now rather than on the next frame.
          pendingRendered = message.lastAgentId;
          if (frame) cancelAnimationFrame(frame);
          flush();
        }
        break;
      case "files":
        composer.showFiles(message);
        break;
      case "mention":
        composer.addMention(message.mention);
        input.focus();
        break;
      case "focus":
        input.focus();
        break;
      case "draft":
        composer.takeDraft(message.text);
        break;
    }
  });

  setRunning(false);
  // The first open: the webview takes the focus as it loads (the click asked for it; the
  // opening input, if any, closes then): the cursor goes to the input.
  if (document.hasFocus()) input.focus();
  else window.addEventListener("focus", () => document.activeElement === document.body && input.focus(), { once: true });
  vscode.postMessage({ type: "ready" });
})();
