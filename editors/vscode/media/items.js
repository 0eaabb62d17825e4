// @ts-check
// The chat's transcript items drawn into the page: user and agent text (Markdown),
// thoughts, notices, plans, tool calls (links open the file in the editor) and
// permission cards (their buttons answer the agent). All text goes in through
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

    return { draw: draw, create: create };
  }

  window.AdkItems = { el: el, createItems: createItems };
})();
