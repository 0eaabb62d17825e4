// The approvals UI around the PermissionBroker: the diff editor (opened before a
// question is asked, its documents loaded as soon as a tool call announces the edit),
// the notification with one button per option, the chat's permission card, the
// editor title bar's Allow / Reject / Answer buttons and the `adkAcp.pendingDiff`
// context. The VS Code side is injected (ApprovalsHost).

import type * as acp from "@agentclientprotocol/sdk/unstable";
import type { ChatSurface } from "./chatSurface";
import type { DiffStore, Proposal, UriLike } from "./diffDocuments";
import type { Metric } from "./metrics";
import { PermissionBroker, type PermissionUi, type Question } from "./permissions";

export interface OptionPick {
  label: string;
  description: string;
  optionId: string;
}

export interface ApprovalsHost {
  /** The diff editor, original vs proposed (resolves when it is shown). */
  openDiff(proposal: Proposal): PromiseLike<unknown>;
  /** Closes the diff editor tabs whose modified side is this document. */
  closeDiffTabs(proposed: UriLike): Promise<void>;
  setContext(key: string, value: boolean): void;
  /** An information notification with buttons; resolves with the button clicked. */
  showInfo(message: string, buttons: string[]): PromiseLike<string | undefined>;
  /** Puts the notification toasts away (one cannot be closed through the API). */
  hideToasts(): void;
  pickOption(picks: OptionPick[], title: string): PromiseLike<OptionPick | undefined>;
  /** Loads a virtual document ahead of its diff editor. */
  preload(uri: UriLike): void;
  /** The text of an open document (unsaved changes included); undefined when it is not open. */
  documentText(uri: UriLike): string | undefined;
  metric: Metric;
  now(): number;
}

export class Approvals {
  readonly broker: PermissionBroker;
  private readonly prepared = new Map<string, Proposal[]>();

  constructor(
    private readonly host: ApprovalsHost,
    private readonly surface: ChatSurface,
    private readonly diffs: DiffStore,
    /** Whether a session's questions are asked: the shown one's and its subagents' (others are answered "cancelled"). */
    private readonly asks: (sessionId: string) => boolean,
    /** Whether a turn runs (the status shows "waiting for approval" / "thinking"). */
    private readonly running: () => boolean,
  ) {
    const ui: PermissionUi = {
      showDiff: (p) => this.showDiff(p),
      closeDiff: (p) => host.closeDiffTabs(p.proposed),
      ask: (q, signal) => this.ask(q, signal),
      pendingChanged: (current, answered) => this.pendingChanged(current, answered),
      proposedText: (p) => host.documentText(p.proposed) ?? diffs.provide(p.proposed),
      now: () => host.now(),
      metric: (name, value) => {
        surface.log.info(`metric ${name}: ${value} ms`);
        host.metric(name, value);
      },
    };
    this.broker = new PermissionBroker(diffs, ui);
  }

  request(params: acp.RequestPermissionRequest, at: number): Promise<acp.RequestPermissionResponse> {
    if (!this.asks(params.sessionId)) return Promise.resolve({ outcome: { outcome: "cancelled" } });
    return this.broker.request(params, at);
  }

  /** Cancels the pending questions: all, or those of `sessionId` and of its subagents. */
  cancelAll(sessionId?: string): number {
    return this.broker.cancelAll(sessionId === undefined ? undefined : (id) => id === sessionId || this.asks(id));
  }

  /** Loads the virtual documents of an announced edit ahead of its permission request. */
  toolUpdate(update: acp.ToolCall | acp.ToolCallUpdate): void {
    if (update.status === "completed" || update.status === "failed") {
      for (const proposal of this.prepared.get(update.toolCallId) ?? []) {
        if (!this.broker.uses(proposal)) this.diffs.remove(proposal);
      }
      this.prepared.delete(update.toolCallId);
      return;
    }
    for (const content of update.content ?? []) {
      if (content.type !== "diff") continue;
      const proposal = this.diffs.prepare(content.path, content.oldText, content.newText);
      const list = this.prepared.get(update.toolCallId) ?? [];
      if (list.includes(proposal)) continue;
      list.push(proposal);
      this.prepared.set(update.toolCallId, list);
      this.host.preload(proposal.original);
      this.host.preload(proposal.proposed);
    }
  }

  private async showDiff(proposal: Proposal): Promise<void> {
    await this.host.openDiff(proposal);
    this.host.setContext("adkAcp.pendingDiff", true);
  }

  private async ask(question: Question, signal: AbortSignal): Promise<string | undefined> {
    const names = question.options.map((o) => o.name);
    const detail = question.detail ? ` — ${question.detail.split("\n")[0]}` : "";
    const where = question.hasDiff ? " (see the diff editor)" : "";
    let clicked = false;
    const picked = Promise.resolve(this.host.showInfo(`adk-acp: ${question.title}${detail}${where}`, names)).then((name) => {
      clicked = true;
      return name;
    });
    const aborted = new Promise<undefined>((resolve) => signal.addEventListener("abort", () => resolve(undefined)));
    const name = await Promise.race([picked, aborted]);
    // Answered elsewhere (diff editor, chat card) or cancelled: the toasts go to the notification centre.
    if (!clicked) this.host.hideToasts();
    return question.options.find((o) => o.name === name)?.optionId;
  }

  private pendingChanged(current: Question | null, answered?: { key: string; answer: string; modified?: boolean }): void {
    const model = this.surface.model;
    if (answered) this.surface.post(model.answerPermission(answered.key, answered.answer, answered.modified));
    if (current && !model.get(current.key)) {
      const { key, title, detail, options } = current;
      this.surface.post(model.addPermission({ id: key, title, detail, options }, current.sessionId));
    }
    this.host.setContext("adkAcp.pendingDiff", current?.hasDiff ?? false);
    if (this.running()) this.surface.setStatus(current ? "waiting for approval" : "thinking");
  }

  /** The chat card's buttons. */
  answer(key: string, optionId: string): void {
    this.broker.answer(key, optionId);
  }

  /** The editor title bar's Allow / Reject: the current question's first option of these kinds. */
  answerFromEditor(kinds: acp.PermissionOptionKind[]): void {
    if (!this.broker.answerKind(kinds)) void this.host.showInfo("adk-acp is not waiting for an answer.", []);
  }

  /** "Answer the Agent…": every option of the current question in a quick pick. */
  async chooseOption(): Promise<void> {
    const current = this.broker.current;
    if (!current) return;
    const pick = await this.host.pickOption(
      current.options.map((o) => ({ label: o.name, description: o.kind.replace(/_/g, " "), optionId: o.optionId })),
      current.title,
    );
    if (pick) this.broker.answer(current.key, pick.optionId);
  }
}
