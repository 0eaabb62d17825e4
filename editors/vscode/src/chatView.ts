// The chat webview view: static HTML/CSS/JS from media/, a strict CSP (no inline code,
// scripts by nonce), messages both ways.

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { FromView, ToView } from "./messages";
import { OpBatcher } from "./opBatcher";

export class ChatViewProvider implements vscode.WebviewViewProvider {
  static readonly viewType = "adkAcp.chat";
  private view: vscode.WebviewView | null = null;
  private queue: ToView[] = [];
  private ready = false;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (message: FromView) => void,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = this.html(view.webview, media);
    view.webview.onDidReceiveMessage((message: FromView) => {
      if (message.type === "ready") {
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
    const asset = (name: string): string => webview.asWebviewUri(vscode.Uri.joinPath(media, name)).toString();
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
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
<link rel="stylesheet" href="${asset("chat.css")}">
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
<script nonce="${nonce}" src="${asset("markdown.js")}"></script>
<script nonce="${nonce}" src="${asset("transcript.js")}"></script>
<script nonce="${nonce}" src="${asset("chat.js")}"></script>
</body>
</html>`;
  }
}
