// session/request_permission: an edit with a diff opens the diff editor (original vs
// proposed) before anything is answered; the question then offers exactly the options
// the agent sent. The first answer wins (notification, editor title bar, chat card);
// a cancel of the turn answers every pending question "cancelled".
// Edit review (issue 36): when the agent names the proposed file the user may change
// (`_meta.adkAcp.editReview.path`), an allowing answer carries what the editable proposed
// side holds at that moment, if the user changed it (`_meta.adkAcp.editReview`).

import type * as acp from "@agentclientprotocol/sdk/unstable";
import type { DiffStore, Proposal } from "./diffDocuments";

export interface Question {
  key: string;
  /** The session that asks (the shown one, or one of its subagents'). */
  sessionId: string;
  title: string;
  detail: string;
  options: acp.PermissionOption[];
  hasDiff: boolean;
}

/** The extension's key under `_meta.adkAcp`, in capabilities, questions and answers. */
export const EDIT_REVIEW = "editReview";

/** `_meta.adkAcp` of a message, when it is an object. */
export function adkMeta(meta: unknown): Record<string, unknown> | undefined {
  const ours = meta && typeof meta === "object" ? (meta as Record<string, unknown>)["adkAcp"] : undefined;
  return ours && typeof ours === "object" ? (ours as Record<string, unknown>) : undefined;
}

/** The path of the proposed file the user may change, named by the agent in the question. */
export function modifiablePath(params: acp.RequestPermissionRequest): string | undefined {
  const review = adkMeta(params._meta)?.[EDIT_REVIEW];
  const path = review && typeof review === "object" ? (review as Record<string, unknown>)["path"] : undefined;
  return typeof path === "string" ? path : undefined;
}

const sameText = (a: string, b: string): boolean => a.replace(/\r\n?/g, "\n") === b.replace(/\r\n?/g, "\n");

export interface PermissionUi {
  /** Opens the diff editor; resolves when it is shown. */
  showDiff(proposal: Proposal): Promise<void>;
  closeDiff(proposal: Proposal): Promise<void>;
  /** Asks (a notification with one button per option); resolves with an optionId, or undefined when dismissed. */
  ask(question: Question, signal: AbortSignal): Promise<string | undefined>;
  /** The current pending question changed (for the chat card, the status bar, title-bar commands). */
  pendingChanged(current: Question | null, answered?: { key: string; answer: string; modified?: boolean }): void;
  /** What the editable proposed side holds now (unsaved changes included); undefined when unknown. */
  proposedText(proposal: Proposal): string | undefined;
  now(): number;
  metric(name: string, value: number): void;
}

interface Pending {
  question: Question;
  sessionId: string;
  proposals: Proposal[];
  abort: AbortController;
  settle: (outcome: acp.RequestPermissionOutcome) => void;
}

export function describeToolCall(toolCall: acp.ToolCallUpdate): string {
  const raw = (toolCall.rawInput ?? {}) as Record<string, unknown>;
  const lines: string[] = [];
  if (typeof raw["command"] === "string") lines.push(`$ ${raw["command"]}`);
  if (typeof raw["dir_path"] === "string") lines.push(`in ${raw["dir_path"]}`);
  for (const location of toolCall.locations ?? []) {
    lines.push(location.line ? `${location.path}:${location.line}` : location.path);
  }
  if (lines.length === 0 && toolCall.rawInput !== undefined) {
    const json = JSON.stringify(toolCall.rawInput);
    lines.push(json.length > 400 ? `${json.slice(0, 400)}…` : json);
  }
  return lines.join("\n");
}

export class PermissionBroker {
  private readonly pending: Pending[] = [];
  private counter = 0;

  constructor(
    private readonly store: DiffStore,
    private readonly ui: PermissionUi,
  ) {}

  get current(): Question | null {
    return this.pending[0]?.question ?? null;
  }

  get count(): number {
    return this.pending.length;
  }

  async request(params: acp.RequestPermissionRequest, receivedAt?: number): Promise<acp.RequestPermissionResponse> {
    const started = receivedAt ?? this.ui.now();
    const toolCall = params.toolCall;
    const diffs = (toolCall.content ?? []).filter(
      (c): c is Extract<acp.ToolCallContent, { type: "diff" }> => c.type === "diff",
    );
    const key = `perm-${++this.counter}`;
    const question: Question = {
      key,
      sessionId: params.sessionId,
      title: toolCall.title ?? "The agent asks permission",
      detail: describeToolCall(toolCall),
      options: params.options,
      hasDiff: diffs.length > 0,
    };
    let settle!: (outcome: acp.RequestPermissionOutcome) => void;
    const settled = new Promise<acp.RequestPermissionOutcome>((resolve) => {
      settle = resolve;
    });
    const entry: Pending = {
      question,
      sessionId: params.sessionId,
      proposals: diffs.map((d) => this.store.prepare(d.path, d.oldText, d.newText)),
      abort: new AbortController(),
      settle: () => undefined,
    };
    let done = false;
    entry.settle = (outcome) => {
      if (done) return;
      done = true;
      entry.abort.abort();
      const index = this.pending.indexOf(entry);
      if (index >= 0) this.pending.splice(index, 1);
      settle(outcome);
    };
    this.pending.push(entry);
    // The diff first: the user sees what would change before any button exists.
    for (const proposal of entry.proposals) {
      try {
        await this.ui.showDiff(proposal);
      } catch {
        // A diff that cannot open still leaves the question; the chat card shows the change.
      }
      if (proposal === entry.proposals[0]) this.ui.metric("permission_to_diff_ms", this.ui.now() - started);
    }
    if (!done) {
      this.ui.pendingChanged(this.current);
      this.ui.ask(question, entry.abort.signal).then(
        (optionId) => {
          if (optionId !== undefined) this.answer(key, optionId);
        },
        () => undefined,
      );
    }
    const outcome = await settled;
    const users = this.usersVersion(params, entry.proposals, outcome);
    for (const proposal of entry.proposals) {
      await this.ui.closeDiff(proposal).catch(() => undefined);
      this.store.remove(proposal);
    }
    const answer = outcome.outcome === "selected" ? outcome.optionId : "cancelled";
    this.ui.pendingChanged(this.current, { key, answer, ...(users ? { modified: true } : {}) });
    if (!users) return { outcome };
    return { outcome, _meta: { adkAcp: { [EDIT_REVIEW]: users } } };
  }

  /** The user's version of the proposed file, for an allowing answer when they changed it. */
  private usersVersion(
    params: acp.RequestPermissionRequest,
    proposals: Proposal[],
    outcome: acp.RequestPermissionOutcome,
  ): { path: string; content: string } | undefined {
    const path = modifiablePath(params);
    if (path === undefined || outcome.outcome !== "selected") return undefined;
    const option = params.options.find((o) => o.optionId === outcome.optionId);
    if (!option?.kind.startsWith("allow")) return undefined;
    const proposal = proposals.find((p) => p.filePath === path && p.editable);
    if (!proposal) return undefined;
    const content = this.ui.proposedText(proposal);
    if (content === undefined || sameText(content, this.store.agentText(proposal, "proposed"))) return undefined;
    return { path, content };
  }

  /** An answer by optionId for the question `key` (or the current one); false when nothing waits for it. */
  answer(key: string | null, optionId: string): boolean {
    const entry = key ? this.pending.find((p) => p.question.key === key) : this.pending[0];
    if (!entry) return false;
    if (!entry.question.options.some((o) => o.optionId === optionId)) return false;
    entry.settle({ outcome: "selected", optionId });
    return true;
  }

  /** An answer by kind (allow_once, reject_once, ...) for the current question, for the title-bar buttons. */
  answerKind(kinds: readonly acp.PermissionOptionKind[]): boolean {
    const entry = this.pending[0];
    if (!entry) return false;
    for (const kind of kinds) {
      const option = entry.question.options.find((o) => o.kind === kind);
      if (option) return this.answer(entry.question.key, option.optionId);
    }
    return false;
  }

  /** session/cancel, the turn's end or the agent's death: every pending question of the session (or of the sessions `sessionId` accepts) is cancelled. */
  cancelAll(sessionId?: string | ((id: string) => boolean)): number {
    const hit = (id: string): boolean => (typeof sessionId === "function" ? sessionId(id) : id === sessionId);
    const victims = this.pending.filter((p) => sessionId === undefined || hit(p.sessionId));
    for (const entry of victims) entry.settle({ outcome: "cancelled" });
    return victims.length;
  }

  uses(proposal: Proposal): boolean {
    return this.pending.some((p) => p.proposals.includes(proposal));
  }

  proposalFor(key: string): Proposal | undefined {
    return this.pending.find((p) => p.question.key === key)?.proposals[0];
  }
}
