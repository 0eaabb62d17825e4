// The chat webview view: the HTML/CSS/JS of media/, inlined into the page (no resource
// round trips before the input shows: a remote or browser workbench fetches each one
// through its service worker), under a strict CSP (scripts and styles only by nonce),
// messages both ways.

import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import * as vscode from "vscode";
import type { FromView, ToView } from "./messages";
import { OpBatcher } from "./opBatcher";

export class ChatViewProvider implements vscode.WebviewViewProvider {
  static readonly viewType = "adkAcp.chat";
  private view: vscode.WebviewView | null = null;
  private queue: ToView[] = [];
  private ready = false;

  private assets: { css: string; scripts: string[] } | null = null;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (message: FromView) => void,
    private readonly mark: (event: "resolved" | "ready") => void = () => undefined,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.mark("resolved");
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = this.html(view.webview, media);
    view.webview.onDidReceiveMessage((message: FromView) => {
      if (message.type === "ready") {
        this.mark("ready");
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
      this.batcher.drop();
      this.view = null;
      this.ready = false;
    });
  }

  private readonly batcher = new OpBatcher((message) => {
    if (this.view) void this.view.webview.postMessage(message);
  });

  post(message: ToView): void {
    // Before "ready" the webview gets a full snapshot anyway; only non-transcript messages wait.
    if (!this.view || !this.ready) {
      if (message.type !== "ops") this.queue.push(message);
      return;
    }
    this.batcher.post(message);
  }

  private html(webview: vscode.Webview, media: vscode.Uri): string {
    const nonce = randomBytes(16).toString("base64");
    if (!this.assets) {
      const read = (name: string): string => readFileSync(vscode.Uri.joinPath(media, name).fsPath, "utf8");
      this.assets = {
        css: read("chat.css").replace(/<\/style/gi, "<\\/style"),
        scripts: ["markdown.js", "transcript.js", "items.js", "composer.js", "chat.js"].map((n) => read(n).replace(/<\/script/gi, "<\\/script")),
      };
    }
    const { css, scripts } = this.assets;
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
