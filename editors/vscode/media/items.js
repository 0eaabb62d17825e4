// @ts-check
// The chat's transcript items drawn into the page: user and agent text (Markdown),
// thoughts, notices, plans (entries, Markdown or a file), tool calls (links open the
// file in the editor), permission cards (their buttons answer the agent), compactions
// (collapsible, with the summary) and subagent sessions (a collapsible block holding
// the subagent's own items). All text goes in through
// textContent or the escaping Markdown renderer. Used by chat.js (global `AdkItems`).
(function () {
  "use strict";

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

  /**
   * The child of `node` with this tag (and class), made when it is not there yet.
   * @template {keyof HTMLElementTagNameMap} K
   * @param {HTMLElement} node
   * @param {K} tag
   * @param {string} [className]
   * @returns {HTMLElementTagNameMap[K]}
   */
  function part(node, tag, className) {
    const found = node.querySelector(":scope > " + tag + (className ? "." + className : ""));
    return /** @type {HTMLElementTagNameMap[K] | null} */ (found) || /** @type {HTMLElementTagNameMap[K]} */ (node.appendChild(el(tag, className)));
  }

  /** A file: URI's path (other URIs as they are). @param {string} uri */
  function fileOf(uri) {
    return uri.startsWith("file://") ? decodeURIComponent(uri.slice("file://".length).replace(/^[^/]*/, "")) : uri;
  }

  /** What a subagent is doing, in words. @param {Extract<Webview.Item, { kind: "subagent" }>} item */
  function subagentState(item) {
    switch (item.state) {
      case "running":
        return "working";
      case "requires_action":
        return "waiting for you";
      case "idle":
        return !item.stopReason || item.stopReason === "end_turn" ? "done" : item.stopReason.replace(/_/g, " ");
      default:
        return "";
    }
  }

  /**
   * @param {Webview.WebviewApi} vscode
   * @param {Webview.MarkdownApi} md
   * @param {HTMLElement} transcript where the items go
   * @returns {Webview.Items}
   */
  function createItems(vscode, md, transcript) {
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
          if (item.markdown !== undefined) {
            const body = el("div", "body");
            body.innerHTML = md.render(item.markdown);
            node.appendChild(body);
            break;
          }
          if (item.uri !== undefined) {
            const path = fileOf(item.uri);
            const link = el("a", "", " " + path.split(/[\\/]/).pop());
            link.href = "#";
            link.title = item.uri;
            link.addEventListener("click", (event) => {
              event.preventDefault();
              openLink(path, null);
            });
            node.appendChild(link);
            break;
          }
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
        case "compaction": {
          const summary = part(node, "summary");
          summary.textContent =
            item.status === "completed" ? "Conversation compacted"
              : item.status === "in_progress" ? "Compacting the conversation…"
                : item.status === "failed" ? "Compacting the conversation failed" + (item.error ? ": " + item.error : "")
                  : "Compaction " + item.status.replace(/_/g, " ") + (item.error ? ": " + item.error : "");
          node.dataset.status = item.status;
          part(node, "div", "body").innerHTML = item.text ? md.render(item.text) : "";
          break;
        }
        case "subagent": {
          const summary = part(node, "summary");
          summary.textContent = "";
          summary.appendChild(el("span", "title", item.title || "Subagent"));
          if (item.description) summary.appendChild(el("span", "description", item.description));
          const state = subagentState(item);
          if (state) summary.appendChild(el("span", "status " + (item.state || ""), state));
          node.dataset.state = item.state || "";
          break;
        }
        case "permission": {
          node.textContent = "";
          node.className = "item permission" + (item.answered ? " answered" : "");
          node.appendChild(el("strong", "", item.title));
          if (item.detail) node.appendChild(el("pre", "", item.detail));
          if (item.answered) {
            const chosen = item.options.find((o) => o.optionId === item.answered);
            const said = item.modified ? "Allowed with your changes" : chosen ? chosen.name : item.answered;
            node.appendChild(el("div", "answer", "Answer: " + said));
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

    /**
     * @param {Webview.Item} item
     * @param {HTMLElement} [parent] the subagent block it goes in
     */
    function create(item, parent) {
      /** @type {HTMLElement} */
      let node;
      if (item.kind === "thought" || item.kind === "compaction" || item.kind === "subagent") {
        const details = el("details", "item " + item.kind);
        // A subagent's block is open while it works (and when it is new), closed when replayed done.
        if (item.kind === "subagent") {
          details.open = item.state !== "idle";
          details.appendChild(el("summary"));
          details.appendChild(el("div", "body"));
        }
        node = details;
      } else {
        node = el("div", "item " + item.kind);
      }
      node.id = "item-" + item.id;
      node.dataset.kind = item.kind;
      const body = parent && parent.querySelector(":scope > .body");
      (body || transcript).appendChild(node);
      return node;
    }

    return { draw: draw, create: create };
  }

  window.AdkItems = { el: el, createItems: createItems };
})();
