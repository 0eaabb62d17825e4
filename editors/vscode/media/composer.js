// @ts-check
// The chat's composer: the input with slash-command and @-mention completion (the
// host searches the files), mention chips, sending (Enter), Escape to stop a turn,
// and files dragged in as mentions. Used by chat.js (global `AdkComposer`).
(function () {
  "use strict";

  /** @typedef {{ label: string, description: string, value?: string, mention?: Webview.Mention }} PopupEntry */
  /** @typedef {{ kind: "command" | "mention", start: number, entries: PopupEntry[], index: number, requestId?: number }} PopupState */

  /**
   * @param {Webview.WebviewApi} vscode
   * @param {{ commands(): Webview.HeaderState["commands"], running(): boolean }} chat
   * @returns {Webview.Composer}
   */
  function createComposer(vscode, chat) {
    const el = window.AdkItems.el;
    /** An element of the page's fixed skeleton (chatView.ts writes it). */
    const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
    const input = /** @type {HTMLTextAreaElement} */ ($("input"));
    const popup = $("popup");
    const mentionsEl = $("mentions");
    const sendButton = /** @type {HTMLButtonElement} */ ($("send"));
    /** @type {Webview.Mention[]} */
    let mentions = [];
    /** @type {PopupState | null} */
    let popupState = null;
    let searchCounter = 0;

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
        const entries = chat.commands()
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
      if (!text || chat.running()) return;
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
      } else if (event.key === "Escape" && chat.running()) {
        event.preventDefault();
        vscode.postMessage({ type: "cancel" });
      }
    });
    input.addEventListener("blur", () => setTimeout(closePopup, 150));
    sendButton.addEventListener("click", send);

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

    /** @param {Extract<Webview.ToView, { type: "files" }>} message the host's answer to an @ search */
    function showFiles(message) {
      if (!popupState || popupState.kind !== "mention" || popupState.requestId !== message.requestId) return;
      /** @type {PopupEntry[]} */
      const entries = [];
      if (message.selection) entries.push({ label: "@selection", description: message.selection.label, mention: message.selection });
      for (const file of message.files) entries.push({ label: file.label, description: "", mention: { kind: "file", path: file.path, label: file.label } });
      showPopup(Object.assign(popupState, { entries: entries, index: 0 }));
    }

    /** @param {string} text typed into the native input while the chat opened: before what the input holds */
    function takeDraft(text) {
      input.value = text + input.value;
      input.selectionStart = input.selectionEnd = input.value.length;
    }

    return { input: input, addMention: addMention, showFiles: showFiles, takeDraft: takeDraft };
  }

  window.AdkComposer = { createComposer: createComposer };
})();
