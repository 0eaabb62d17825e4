// The globals of the chat webview's scripts (media/*.js, plain scripts checked with
// `// @ts-check`): the VS Code webview API, the scripts' shared objects, and the
// message and transcript types under the `Webview` namespace for their JSDoc.

declare namespace Webview {
  type ToView = import("./messages").ToView;
  type FromView = import("./messages").FromView;
  type Mention = import("./messages").Mention;
  type Op = import("./chatItems").Op;
  type Item = import("./chatItems").Item;
  type HeaderState = import("./chatItems").HeaderState;
  type TranscriptEntry = import("./messages").TranscriptEntry;
  type TranscriptView = import("./messages").TranscriptView;
  type Transcript = import("./messages").Transcript;
  type TranscriptApi = import("./messages").TranscriptApi;
  type MarkdownApi = import("./messages").MarkdownApi;
  type WebviewApi = import("./messages").WebviewApi;

  /** media/items.js: draws transcript items. */
  interface Items {
    draw(entry: TranscriptEntry): void;
    /** A new item's element, in the transcript or in `parent`'s block (a subagent's). */
    create(item: Item, parent?: HTMLElement): HTMLElement;
  }
  interface ItemsApi {
    el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K];
    createItems(vscode: WebviewApi, md: MarkdownApi, transcript: HTMLElement): Items;
  }

  /** media/composer.js: the input, its completion and mention chips. */
  interface Composer {
    input: HTMLTextAreaElement;
    addMention(mention: Mention): void;
    showFiles(message: Extract<ToView, { type: "files" }>): void;
    /** Text typed into the native input while the chat opened, put before the input's. */
    takeDraft(text: string): void;
  }
  interface ComposerApi {
    createComposer(vscode: WebviewApi, chat: { commands(): HeaderState["commands"]; running(): boolean }): Composer;
  }
}

declare function acquireVsCodeApi(): import("./messages").WebviewApi;

interface Window {
  AdkMarkdown: import("./messages").MarkdownApi;
  AdkTranscript: import("./messages").TranscriptApi;
  AdkItems: Webview.ItemsApi;
  AdkComposer: Webview.ComposerApi;
}
