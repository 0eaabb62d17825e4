// @ts-check
// The chat view's script: renders the host's operations (upsert / append / state),
// the composer with slash-command and @-mention completion, and answers permission
// cards. All text goes in through textContent or the escaping Markdown renderer.
(function () {
  "use strict";
  const vscode = acquireVsCodeApi();
  const md = window.AdkMarkdown;
  /** An element of the page's fixed skeleton (chatView.ts writes it). */
  const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const transcript = $("transcript");
  const input = /** @type {HTMLTextAreaElement} */ ($("input"));
  const popup = $("popup");
  const mentionsEl = $("mentions");
  const stopButton = $("stop");
  const sendButton = /** @type {HTMLButtonElement} */ ($("send"));
  const stateEl = $("state");

  /** @typedef {{ label: string, description: string, value?: string, mention?: Webview.Mention }} PopupEntry */
  /** @typedef {{ kind: "command" | "mention", start: number, entries: PopupEntry[], index: number, requestId?: number }} PopupState */

  /** The text of an item that has one (the transcript only streams into those). */
  const textOf = (/** @type {Webview.Item} */ item) => /** @type {{ text: string }} */ (item).text;

  const store = window.AdkTranscript.createTranscript({
    reset: () => {
      dirty.clear();
      transcript.textContent = "";
    },
    created: (entry) => {
      entry.el = create(entry.item);
    },
    changed: (entry) => upsert(entry),
    appended: (entry) => schedule(entry.item.id),
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
  /** @type {Webview.Mention[]} */
  let mentions = [];
  /** @type {PopupState | null} */
  let popupState = null;
  let searchCounter = 0;
  /** @type {string | null} */
  let pendingRendered = null;
  /** @type {{ receivedAt?: number, sentAt?: number }} */
  let turnTiming = {};

  /**
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {string} [className]
   * @param {string} [text]
   * @returns {HTMLElementTagNameMap[K]}
   */
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

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

  /** @param {string} path @param {number | null | undefined} line */
  function openLink(path, line) {
    vscode.postMessage({ type: "open", path: path, line: line });
  }

  /** @param {Webview.TranscriptEntry} entry */
  function draw(entry) {
    const item = entry.item;
    const node = /** @type {HTMLElement} */ (entry.el);
    switch (item.kind) {
      case "user":
        node.textContent = item.text;
        break;
      case "agent":
        node.innerHTML = md.render(item.text);
        break;
      case "thought": {
        let body = node.querySelector(".body");
        if (!body) {
          node.textContent = "";
          const summary = el("summary", "", "Thinking");
          node.appendChild(summary);
          body = el("div", "body");
          node.appendChild(body);
        }
        body.innerHTML = md.render(item.text);
        break;
      }
      case "notice":
        node.className = "item notice " + (item.level || "info");
        node.textContent = item.text;
        break;
      case "plan": {
        node.textContent = "";
        node.appendChild(el("strong", "", "Plan"));
        const list = el("ul");
        for (const entryItem of item.entries) {
          const li = el("li", entryItem.status, entryItem.content);
          li.setAttribute("aria-label", entryItem.status.replace("_", " ") + ": " + entryItem.content);
          list.appendChild(li);
        }
        node.appendChild(list);
        break;
      }
      case "tool": {
        node.textContent = "";
        node.dataset.status = item.status;
        const head = el("div", "head");
        head.appendChild(el("span", "kind", item.toolKind));
        head.appendChild(el("span", "title", item.title));
        head.appendChild(el("span", "status " + item.status, item.status.replace("_", " ")));
        node.appendChild(head);
        if (item.locations.length) {
          const locations = el("div", "locations");
          for (const location of item.locations) {
            const link = el("a", "", location.path.split(/[\\/]/).pop() + (location.line ? ":" + location.line : ""));
            link.href = "#";
            link.title = location.path;
            link.addEventListener("click", (event) => {
              event.preventDefault();
              openLink(location.path, location.line);
            });
            locations.appendChild(link);
          }
          node.appendChild(locations);
        }
        for (const diff of item.diffs) {
          const stat = el("div", "diffstat");
          stat.appendChild(el("span", "", (diff.isNew ? "new " : "") + diff.path.split(/[\\/]/).pop() + " "));
          stat.appendChild(el("span", "added", "+" + diff.added + " "));
          stat.appendChild(el("span", "removed", "-" + diff.removed));
          node.appendChild(stat);
        }
        if (item.text) node.appendChild(el("pre", "", item.text.length > 4000 ? item.text.slice(0, 4000) + "…" : item.text));
        if (item.terminalIds.length) node.appendChild(el("div", "terminal-note", "Output in the terminal panel"));
        break;
      }
      case "permission": {
        node.textContent = "";
        node.className = "item permission" + (item.answered ? " answered" : "");
        node.appendChild(el("strong", "", item.title));
        if (item.detail) node.appendChild(el("pre", "", item.detail));
        if (item.answered) {
          const chosen = item.options.find((o) => o.optionId === item.answered);
          node.appendChild(el("div", "answer", "Answer: " + (chosen ? chosen.name : item.answered)));
        } else {
          const options = el("div", "options");
          options.setAttribute("role", "group");
          options.setAttribute("aria-label", "Answer the agent");
          for (const option of item.options) {
            const button = el("button", option.kind.startsWith("allow") ? "" : "secondary", option.name);
            button.dataset.optionId = option.optionId;
            button.addEventListener("click", () => vscode.postMessage({ type: "permission", key: item.id, optionId: option.optionId }));
            options.appendChild(button);
          }
          node.appendChild(options);
        }
        break;
      }
    }
  }

  /** @param {Webview.Item} item */
  function create(item) {
    /** @type {HTMLElement} */
    let node;
    if (item.kind === "thought") {
      node = el("details", "item thought");
    } else {
      node = el("div", "item " + item.kind);
    }
    node.id = "item-" + item.id;
    node.dataset.kind = item.kind;
    transcript.appendChild(node);
    return node;
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

  // ---- composer ----------------------------------------------------------------

  function renderMentions() {
    mentionsEl.textContent = "";
    mentions.forEach((mention, index) => {
      const chip = el("span", "chip", "@" + mention.label);
      const remove = el("button", "", "×");
      remove.setAttribute("aria-label", "Remove " + mention.label);
      remove.addEventListener("click", () => {
        mentions.splice(index, 1);
        renderMentions();
        input.focus();
      });
      chip.appendChild(remove);
      mentionsEl.appendChild(chip);
    });
  }

  /** @param {Webview.Mention} mention */
  function addMention(mention) {
    if (!mentions.some((m) => m.kind === mention.kind && m.path === mention.path && m.label === mention.label)) {
      mentions.push(mention);
      renderMentions();
    }
  }

  function closePopup() {
    popupState = null;
    popup.hidden = true;
    popup.textContent = "";
    input.removeAttribute("aria-activedescendant");
  }

  /** @param {PopupState} state */
  function showPopup(state) {
    popupState = state;
    popup.textContent = "";
    if (!state.entries.length) {
      closePopup();
      return;
    }
    state.entries.forEach((entry, index) => {
      const row = el("div", "", entry.label);
      row.id = "popup-" + index;
      row.setAttribute("role", "option");
      row.setAttribute("aria-selected", String(index === state.index));
      if (entry.description) row.appendChild(el("span", "desc", entry.description));
      row.addEventListener("mousedown", (event) => {
        event.preventDefault();
        state.index = index;
        accept();
      });
      popup.appendChild(row);
    });
    popup.hidden = false;
    input.setAttribute("aria-activedescendant", "popup-" + state.index);
    const selected = /** @type {Element | undefined} */ (popup.children[state.index]);
    if (selected && selected.scrollIntoView) selected.scrollIntoView({ block: "nearest" });
  }

  function accept() {
    const state = popupState;
    if (!state) return;
    const entry = state.entries[state.index];
    const caret = input.selectionStart;
    if (state.kind === "command") {
      const value = /** @type {string} */ (entry.value);
      input.value = "/" + value + " " + input.value.slice(caret);
      input.selectionStart = input.selectionEnd = value.length + 2;
    } else {
      addMention(/** @type {Webview.Mention} */ (entry.mention));
      input.value = input.value.slice(0, state.start) + input.value.slice(caret);
      input.selectionStart = input.selectionEnd = state.start;
    }
    closePopup();
    input.focus();
  }

  function updateCompletion() {
    const caret = input.selectionStart;
    const before = input.value.slice(0, caret);
    const command = /^\/([\w-]*)$/.exec(before);
    if (command) {
      const prefix = command[1].toLowerCase();
      const entries = header.commands
        .filter((c) => c.name.toLowerCase().startsWith(prefix))
        .map((c) => ({ label: "/" + c.name, description: c.description, value: c.name }));
      showPopup({ kind: "command", start: 0, entries: entries, index: 0 });
      return;
    }
    const at = /(^|\s)@([^\s@]*)$/.exec(before);
    if (at) {
      const requestId = ++searchCounter;
      popupState = { kind: "mention", start: caret - at[2].length - 1, entries: [], index: 0, requestId: requestId };
      vscode.postMessage({ type: "searchFiles", requestId: requestId, query: at[2] });
      return;
    }
    closePopup();
  }

  function send() {
    const text = input.value.trim();
    if (!text || running) return;
    closePopup();
    vscode.postMessage({ type: "prompt", text: text, mentions: mentions });
    input.value = "";
    mentions = [];
    renderMentions();
  }

  input.addEventListener("input", updateCompletion);
  input.addEventListener("keydown", (event) => {
    if (popupState && !popup.hidden) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const n = popupState.entries.length;
        popupState.index = (popupState.index + (event.key === "ArrowDown" ? 1 : n - 1)) % n;
        showPopup(popupState);
        return;
      }
      if (event.key === "Enter" || event.key === "Tab") {
        event.preventDefault();
        accept();
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        closePopup();
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    } else if (event.key === "Escape" && running) {
      event.preventDefault();
      vscode.postMessage({ type: "cancel" });
    }
  });
  input.addEventListener("blur", () => setTimeout(closePopup, 150));
  sendButton.addEventListener("click", send);
  stopButton.addEventListener("click", () => vscode.postMessage({ type: "cancel" }));
  $("new").addEventListener("click", () => vscode.postMessage({ type: "newChat" }));
  $("history").addEventListener("click", () => vscode.postMessage({ type: "history" }));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && running && event.target !== input) vscode.postMessage({ type: "cancel" });
  });

  // Files dragged in (from the explorer or an editor tab; VS Code hands them to a webview
  // while Shift is held) become @-mentions.
  /** @param {DataTransfer} transfer */
  function droppedUris(transfer) {
    /** @type {string[]} */
    const uris = [];
    for (const type of ["application/vnd.code.uri-list", "text/uri-list"]) {
      const text = transfer.getData(type);
      if (!text) continue;
      for (const line of text.split(/\r?\n/)) if (line.trim() && !line.startsWith("#")) uris.push(line.trim());
      if (uris.length) return uris;
    }
    const resources = transfer.getData("resourceurls");
    if (resources) {
      try {
        for (const uri of JSON.parse(resources)) uris.push(String(uri));
      } catch (error) {
        // not a list of resources: nothing to mention
      }
    }
    return uris;
  }
  document.addEventListener("dragover", (event) => {
    event.preventDefault();
    document.body.dataset.dragging = "true";
  });
  document.addEventListener("dragleave", () => delete document.body.dataset.dragging);
  document.addEventListener("drop", (event) => {
    event.preventDefault();
    delete document.body.dataset.dragging;
    const uris = droppedUris(/** @type {DataTransfer} */ (event.dataTransfer));
    if (uris.length) vscode.postMessage({ type: "dropped", uris: uris });
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
      case "files": {
        if (!popupState || popupState.kind !== "mention" || popupState.requestId !== message.requestId) break;
        /** @type {PopupEntry[]} */
        const entries = [];
        if (message.selection) entries.push({ label: "@selection", description: message.selection.label, mention: message.selection });
        for (const file of message.files) entries.push({ label: file.label, description: "", mention: { kind: "file", path: file.path, label: file.label } });
        showPopup(Object.assign(popupState, { entries: entries, index: 0 }));
        break;
      }
      case "mention":
        addMention(message.mention);
        input.focus();
        break;
      case "focus":
        input.focus();
        break;
    }
  });

  setRunning(false);
  vscode.postMessage({ type: "ready" });
})();
