// The globals of the chat webview's scripts (media/*.js, plain scripts checked with
// `// @ts-check`): the VS Code webview API, the scripts' shared objects, and the
// message and transcript types under the `Webview` namespace for their JSDoc.

declare namespace Webview {
  type ToView = import("./messages").ToView;
  type FromView = import("./messages").FromView;
  type Mention = import("./messages").Mention;
  type Op = import("./chatModel").Op;
  type Item = import("./chatModel").Item;
  type HeaderState = import("./chatModel").HeaderState;
  type TranscriptEntry = import("./messages").TranscriptEntry;
  type TranscriptView = import("./messages").TranscriptView;
  type Transcript = import("./messages").Transcript;
  type TranscriptApi = import("./messages").TranscriptApi;
  type MarkdownApi = import("./messages").MarkdownApi;
}

declare function acquireVsCodeApi(): import("./messages").WebviewApi;

interface Window {
  AdkMarkdown: import("./messages").MarkdownApi;
  AdkTranscript: import("./messages").TranscriptApi;
}
