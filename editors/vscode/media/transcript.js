// @ts-check
// The webview's transcript state: folds the host's operations (reset / upsert / append /
// remove / state) into items, in order, and tells the view what to draw. No DOM here: chat.js
// draws, and the extension's unit tests run this same code headless.
(/** @param {any} root the global object (the webview's window) */ function (root) {
  "use strict";

  /**
   * @param {Webview.TranscriptView} view
   * @returns {Webview.Transcript}
   */
  function createTranscript(view) {
    /** @type {Map<string, Webview.TranscriptEntry>} id -> {item, ...whatever the view keeps} */
    const entries = new Map();
    /** @type {string[]} */
    const order = [];

    /** @param {Webview.Op[]} ops */
    function apply(ops) {
      for (const op of ops) {
        switch (op.op) {
          case "reset":
            entries.clear();
            order.length = 0;
            view.reset();
            break;
          case "upsert": {
            let entry = entries.get(op.item.id);
            if (!entry) {
              entry = { item: op.item };
              entries.set(op.item.id, entry);
              order.push(op.item.id);
              view.created(entry);
            } else {
              entry.item = op.item;
            }
            view.changed(entry);
            break;
          }
          case "append": {
            const entry = entries.get(op.id);
            if (entry) {
              /** @type {{ text: string }} */ (entry.item).text += op.text;
              view.appended(entry);
            }
            break;
          }
          case "remove": {
            const entry = entries.get(op.id);
            if (entry) {
              entries.delete(op.id);
              order.splice(order.indexOf(op.id), 1);
              view.removed(entry);
            }
            break;
          }
          case "state":
            view.state(op.state);
            break;
        }
      }
    }

    return {
      apply: apply,
      get: (id) => entries.get(id),
      items: () => order.map((id) => /** @type {Webview.TranscriptEntry} */ (entries.get(id)).item),
    };
  }

  /** @type {Webview.TranscriptApi} */
  const api = { createTranscript: createTranscript };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.AdkTranscript = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
