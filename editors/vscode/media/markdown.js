// @ts-check
// A small, safe Markdown renderer for the chat: every character of the input is
// HTML-escaped before any markup is added, links are kept only for http(s) and file
// URLs, and no raw HTML ever passes through. Used by the webview (global
// `AdkMarkdown`) and by the unit tests (CommonJS).
(/** @param {any} root the global object (the webview's window) */ function (root) {
  "use strict";

  /** @param {unknown} text @returns {string} */
  function escapeHtml(text) {
    return String(text)
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;")
      .replace(/'/g, "&#39;");
  }

  /** @param {string} text @returns {string} */
  function unescapeHtml(text) {
    return text
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&amp;/g, "&");
  }

  /** @param {string} url @returns {string | null} */
  function safeUrl(url) {
    const trimmed = url.trim();
    return /^(https?:|file:)/i.test(trimmed) ? trimmed : null;
  }

  // Inline markup on already-escaped text; code spans are cut out first so nothing inside them changes.
  /** @param {string} escaped @returns {string} */
  function inline(escaped) {
    /** @type {string[]} */
    const codes = [];
    let text = escaped.replace(/`([^`\n]+)`/g, function (/** @type {string} */ _, /** @type {string} */ code) {
      codes.push("<code>" + code + "</code>");
      return "\u0000" + (codes.length - 1) + "\u0000";
    });
    text = text.replace(/\[([^\]\n]+)\]\(((?:[^()\s]|\([^()\s]*\))+)\)/g, function (/** @type {string} */ all, /** @type {string} */ label, /** @type {string} */ url) {
      const href = safeUrl(unescapeHtml(url));
      if (!href) return label;
      return '<a href="' + escapeHtml(href) + '" title="' + escapeHtml(href) + '">' + label + "</a>";
    });
    text = text.replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>");
    text = text.replace(/(^|[^*\w])\*([^*\n]+)\*(?!\w)/g, "$1<em>$2</em>");
    text = text.replace(/(^|[^_\w])_([^_\n]+)_(?!\w)/g, "$1<em>$2</em>");
    text = text.replace(/~~([^~\n]+)~~/g, "<del>$1</del>");
    return text.replace(/\u0000(\d+)\u0000/g, function (/** @type {string} */ _, /** @type {string} */ i) {
      return codes[Number(i)];
    });
  }

  /** @param {string} markdown @returns {string} */
  function render(markdown) {
    const lines = String(markdown).replace(/\r\n?/g, "\n").split("\n");
    /** @type {string[]} */
    const out = [];
    /** @type {string[]} */
    let paragraph = [];
    /** @type {{ tag: string, items: string[] } | null} */
    let list = null;
    /** @type {string[]} */
    let quote = [];

    function flushParagraph() {
      if (paragraph.length) out.push("<p>" + paragraph.map(function (/** @type {string} */ l) { return inline(escapeHtml(l)); }).join("<br>") + "</p>");
      paragraph = [];
    }
    function flushList() {
      if (list) out.push("<" + list.tag + ">" + list.items.map(function (/** @type {string} */ i) { return "<li>" + inline(escapeHtml(i)) + "</li>"; }).join("") + "</" + list.tag + ">");
      list = null;
    }
    function flushQuote() {
      if (quote.length) out.push("<blockquote>" + render(quote.join("\n")) + "</blockquote>");
      quote = [];
    }
    function flushAll() {
      flushParagraph();
      flushList();
      flushQuote();
    }

    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      const fence = /^\s*(```|~~~)\s*([\w+#.-]*)\s*$/.exec(line);
      if (fence) {
        flushAll();
        const body = [];
        let j = i + 1;
        while (j < lines.length && !new RegExp("^\\s*" + fence[1] + "\\s*$").test(lines[j])) body.push(lines[j++]);
        const lang = fence[2] ? ' data-lang="' + escapeHtml(fence[2]) + '"' : "";
        out.push("<pre" + lang + "><code>" + escapeHtml(body.join("\n")) + "</code></pre>");
        i = j; // an unclosed fence (still streaming) runs to the end
        continue;
      }
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      if (heading) {
        flushAll();
        const level = Math.min(6, heading[1].length + 2); // h3..h6: the view is small
        out.push("<h" + level + ">" + inline(escapeHtml(heading[2])) + "</h" + level + ">");
        continue;
      }
      const quoted = /^\s*>\s?(.*)$/.exec(line);
      if (quoted) {
        flushParagraph();
        flushList();
        quote.push(quoted[1]);
        continue;
      }
      flushQuote();
      const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
      const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
      if (bullet || numbered) {
        flushParagraph();
        const tag = bullet ? "ul" : "ol";
        if (!list || list.tag !== tag) {
          flushList();
          list = { tag: tag, items: [] };
        }
        list.items.push(/** @type {RegExpExecArray} */ (bullet || numbered)[1]);
        continue;
      }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
        flushAll();
        out.push("<hr>");
        continue;
      }
      if (!line.trim()) {
        flushAll();
        continue;
      }
      flushList();
      paragraph.push(line);
    }
    flushAll();
    return out.join("");
  }

  /** @type {Webview.MarkdownApi} */
  const api = { render: render, escapeHtml: escapeHtml };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.AdkMarkdown = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
