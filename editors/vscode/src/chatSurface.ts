// What the user sees of the extension's state: the chat transcript (its model, posted
// to the webview as operations), the status bar item and the `adkAcp.busy` context,
// and error reports (a notice in the chat plus a notification with the helpful action).
// The VS Code side is injected (SurfaceHost).

import { AgentNotInstalled, UntrustedWorkspace } from "./agentCommand";
import { ChatModel, type HeaderState, type Op } from "./chatModel";
import type { ToView } from "./messages";

export type Status = HeaderState["status"];

export interface Log {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  show(): void;
}

export interface SurfaceHost {
  log: Log;
  /** The status bar item's text and tooltip. */
  showStatus(text: string, tooltip: string): void;
  /** A `when`-clause context key (setContext). */
  setContext(key: string, value: boolean): void;
  /** An error notification with buttons; resolves with the button clicked. */
  showError(message: string, actions: string[]): PromiseLike<string | undefined>;
  openSettings(): void;
  manageTrust(): void;
}

/** The chat webview as the host sees it (ChatViewProvider). */
export interface ViewPort {
  post(message: ToView): void;
}

export class ChatSurface {
  model = new ChatModel();
  view: ViewPort | null = null;

  constructor(private readonly host: SurfaceHost) {}

  get log(): Log {
    return this.host.log;
  }

  /** Transcript operations to the webview (nothing when there are none). */
  post(ops: Op[]): void {
    if (ops.length) this.view?.post({ type: "ops", ops });
  }

  send(message: ToView): void {
    this.view?.post(message);
  }

  notice(text: string, level = "info"): void {
    this.post(this.model.addNotice(text, level));
  }

  setStatus(state: Status): void {
    const model = this.model.state.configOptions.find((o) => o.category === "model");
    const modelName = model?.options.find((o) => o.value === model.currentValue)?.name ?? model?.currentValue;
    const icon =
      state === "thinking" || state === "starting" ? "$(loading~spin)" : state === "waiting for approval" ? "$(bell-dot)" : "$(sparkle)";
    const busy = state === "thinking" || state === "waiting for approval";
    this.host.showStatus(
      `${icon} adk-acp${modelName ? `: ${modelName}` : ""} · ${state}`,
      `adk-acp: ${state}${modelName ? ` (model ${modelName})` : ""}`,
    );
    this.post(this.model.setState({ status: state, busy }));
    this.host.setContext("adkAcp.busy", busy);
  }

  /** An error: logged, a notice in the chat, a notification offering what fixes it. */
  reportError(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.host.log.error(message);
    this.notice(message, "error");
    const actions =
      error instanceof UntrustedWorkspace
        ? ["Manage Workspace Trust"]
        : error instanceof AgentNotInstalled || /could not start|settings need a fix/.test(message)
          ? ["Open Settings", "Show Log"]
          : ["Show Log"];
    void this.host.showError(message, actions).then((choice) => {
      if (choice === "Open Settings") this.host.openSettings();
      if (choice === "Manage Workspace Trust") this.host.manageTrust();
      if (choice === "Show Log") this.host.log.show();
    });
  }
}
