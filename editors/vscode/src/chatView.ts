// The chat webview view: the HTML/CSS/JS of media/ (minified into dist/media/ by the
// build), inlined into the page (no resource round trips before the input shows: a
// remote or browser workbench fetches each one through its service worker), under a
// strict CSP (scripts and styles only by nonce), messages both ways. The page is set
// first thing when the view resolves; its files are read right after activation.

import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import * as vscode from "vscode";
import type { FromView, ToView } from "./messages";
import { OpBatcher } from "./opBatcher";
import { RESTORE_WINDOW_MS, type OpeningInput } from "./openingInput";

export class ChatViewProvider implements vscode.WebviewViewProvider {
  static readonly viewType = "adkAcp.chat";
  private view: vscode.WebviewView | null = null;
  private queue: ToView[] = [];
  private ready = false;

  private assets: { css: string; scripts: string[] } | null = null;
  /** The native input while the webview is made (none until `extension.ts` sets it). */
  opening: OpeningInput | null = null;
  private readonly registeredAt = Date.now();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (message: FromView) => void,
    private readonly mark: (event: "resolved" | "ready", restored?: boolean) => void = () => undefined,
  ) {}

  /** Our own command asks for the chat (openingInput.ts: `commanded`); true when the
   * opening input has the user's typing. */
  commanded(): boolean {
    return this.opening?.commanded(this.view !== null) ?? false;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    // The page first (the click waits for it); everything else after.
    view.webview.options = { enableScripts: true, localResourceRoots: [this.media] };
    view.webview.html = this.html(view.webview);
    // Right after the provider's registration: the workbench restoring the chat, no click.
    const restored = Date.now() - this.registeredAt < RESTORE_WINDOW_MS;
    this.opening?.resolved(restored);
    this.mark("resolved", restored);
    this.view = view;
    this.ready = false;
    view.onDidChangeVisibility(() => {
      if (!view.visible) this.opening?.viewHidden();
    });
    view.webview.onDidReceiveMessage((message: FromView) => {
      if (message.type === "ready") {
        this.mark("ready");
        this.opening?.ready();
        this.ready = true;
        this.onMessage(message);
        const queued = this.queue;
        this.queue = [];
        for (const m of queued) if (m.type !== "ops") void view.webview.postMessage(m);
        return;
      }
      this.onMessage(message);
    });
    view.onDidDispose(() => {
      this.opening?.viewHidden();
      this.batcher.drop();
      this.view = null;
      this.ready = false;
    });
  }

  private readonly batcher = new OpBatcher((message) => {
    if (this.view) void this.view.webview.postMessage(message);
  });

  post(message: ToView): void {
    if (message.type === "mention") this.opening?.composerWanted();
    // Before "ready" the webview gets a full snapshot anyway; only non-transcript messages wait.
    if (!this.view || !this.ready) {
      if (message.type !== "ops") this.queue.push(message);
      return;
    }
    this.batcher.post(message);
  }

  private get media(): vscode.Uri {
    return vscode.Uri.joinPath(this.extensionUri, "media");
  }

  /** Reads the page's CSS and scripts (once; `extension.ts` calls it right after activation,
   * so the first click does not wait for the files). */
  loadAssets(): { css: string; scripts: string[] } {
    if (!this.assets) {
      // Minified by the build (scripts/build.mjs); the sources are media/.
      const built = vscode.Uri.joinPath(this.extensionUri, "dist", "media");
      const read = (name: string): string => readFileSync(vscode.Uri.joinPath(built, name).fsPath, "utf8");
      this.assets = {
        css: read("chat.css").replace(/<\/style/gi, "<\\/style"),
        scripts: ["markdown.js", "transcript.js", "items.js", "composer.js", "chat.js"].map((n) => read(n).replace(/<\/script/gi, "<\\/script")),
      };
    }
    return this.assets;
  }

  private html(webview: vscode.Webview): string {
    const nonce = randomBytes(16).toString("base64");
    const { css, scripts } = this.loadAssets();
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource} 'nonce-${nonce}'`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style nonce="${nonce}">${css}</style>
<title>adk-acp</title>
</head>
<body>
<header id="header">
  <div id="pickers" role="toolbar" aria-label="Mode and model"></div>
  <div id="usage" aria-live="polite"></div>
</header>
<main id="transcript" role="log" aria-live="polite" aria-label="Chat transcript" tabindex="0"></main>
<footer id="composer">
  <div id="mentions" aria-label="Mentions"></div>
  <div id="popup" role="listbox" hidden></div>
  <textarea id="input" rows="3" aria-label="Message the agent (Enter sends, Shift+Enter new line, / commands, @ files)" placeholder="Ask adk-acp… (/ for commands, @ for files)"></textarea>
  <div id="actions">
    <span id="state" aria-live="polite"></span>
    <button id="new" title="New chat" aria-label="New chat">New</button>
    <button id="history" title="Earlier chats" aria-label="Earlier chats">History</button>
    <button id="stop" title="Stop (Escape)" aria-label="Stop" hidden>Stop</button>
    <button id="send" title="Send (Enter)" aria-label="Send">Send</button>
  </div>
</footer>
${scripts.map((js) => `<script nonce="${nonce}">${js}</script>`).join("\n")}
</body>
</html>`;
  }
}
