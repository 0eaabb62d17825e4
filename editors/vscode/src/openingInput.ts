// The chat's first open in a page: VS Code makes a webview view only when it is first
// shown, and making it (the frames, the host page, the service worker in a browser) takes
// longer than the 300 ms an open may take. So when the chat's webview is being made and
// has not said "ready" within a short grace, a native input (a VS Code quick input: it
// is in the workbench already, it shows at once) takes the user's first words; the chat
// takes over when it is ready. The states:
//
//   idle ──resolved──▶ waiting ──grace over──▶ shown ──┬─ Enter ──────▶ done (sent)
//     ▲                  │                            ├─ ready, empty ─▶ done (chat focused)
//     │                  └─ ready / hidden ──▶ done   ├─ ready, draft ─▶ shown (stays; Enter
//     │                                               │                  sends, Escape moves)
//     └──── (a later resolve: a new webview)          ├─ Escape / blur ▶ done (draft moved)
//                                                     └─ view hidden ──▶ done (draft moved,
//                                                                        chat not focused)
//   idle / done ──commanded, no webview yet──▶ shown (at once; the resolve that follows
//                                              keeps it, or stays done once it is closed)
//   waiting ──commanded──▶ shown (the grace cut short: the user asked for the chat)
//
// `commanded` is the extension's own command asking for the chat (a key, the status bar):
// the extension hears of the user's intent the moment the user acts, long before VS Code
// resolves the view, and a webview cannot be ready that soon, so no grace is needed.
//
// Nothing typed is lost: Enter sends through the chat's own send path; any other way
// out moves the draft into the chat's input. The text never moves while the user may be
// typing (the chat being ready leaves a non-empty input open). The VS Code side is
// injected (OpeningHost); the state machine itself is pure.

/** How long the webview may take before the native input shows. The kept chat shows again
 * in 134-246 ms and a first open's webview takes 0.6 s and more before its input can take
 * typing (code-server, 2 cores); 120 ms after the view is resolved (itself 20-100 ms after
 * the click) leaves the quick input ~80 ms of the 300 ms to show, and a machine that makes
 * the webview within it never sees the quick input. */
export const GRACE_MS = 120;

/** A resolve this soon after the provider was registered is the workbench restoring the
 * chat as the last-open view (no click asked for it): no quick input then. The restore's
 * resolve comes one host round trip after the registration: 1.7 s was seen at load 13 on
 * 2 cores; a click this early after activation gets the webview alone. */
export const RESTORE_WINDOW_MS = 3000;

export const PLACEHOLDER = "Ask adk-acp — the chat is opening…";
export const READY_PROMPT = "The chat is ready: Enter sends it, Escape moves it into the chat's input.";

export type OpeningState = "idle" | "waiting" | "shown" | "done";

export interface OpeningHost {
  /** The setting (adkAcp.quickInputWhileOpening). */
  enabled(): boolean;
  /** Runs `run` after `ms`; returns what cancels it. */
  after(ms: number, run: () => void): () => void;
  /** Shows the native input, empty and focused. */
  showInput(): void;
  /** Tells the shown input that the chat is ready (it holds a draft). */
  inputReady(): void;
  /** Closes the native input (its hide event comes back to `hidden()`, ignored then). */
  closeInput(): void;
  /** What the native input holds. */
  inputValue(): string;
  /** A prompt, through the chat's own send path. */
  send(text: string): void;
  /** The draft into the chat's input, the caret at its end; the chat focused when `focus`. */
  moveDraft(text: string, focus: boolean): void;
  /** Reveals the chat and puts the cursor in its input. */
  focusChat(): void;
  /** What happened, for the log and the metrics. */
  note(event: OpeningEvent): void;
}

export type OpeningEvent = "shown" | "sent" | "closed-empty" | "kept-draft" | "moved-draft" | "dismissed" | "skipped";

export class OpeningInput {
  private current: OpeningState = "idle";
  private chatReady = false;
  private cancelTimer: (() => void) | null = null;
  /** The input was shown by a command before the chat's webview was resolved: the resolve
   * on its way belongs to the same open (it neither restarts nor skips it). */
  private resolvePending = false;
  /** Closed on our side: the text handled then, and whether the chat took the focus.
   * Keys typed before the close reached the input come with its hide event. */
  private closing: { handled: string; focus: boolean } | null = null;

  constructor(
    private readonly host: OpeningHost,
    private readonly graceMs = GRACE_MS,
  ) {}

  get state(): OpeningState {
    return this.current;
  }

  /** The chat's webview is being made (resolveWebviewView); `restored`: by the
   * workbench's restore, not a click. */
  resolved(restored: boolean): void {
    this.stopTimer();
    if (this.resolvePending) {
      // The open a command started (the user asked: never taken for a restore); its input
      // is shown still, or the user is done with it already: no second input either way.
      this.resolvePending = false;
      return;
    }
    if (this.current === "shown") this.viewHidden(); // a new webview: the old input's part is over
    this.chatReady = false;
    if (restored || !this.host.enabled()) {
      this.current = "done";
      this.host.note("skipped");
      return;
    }
    this.current = "waiting";
    this.cancelTimer = this.host.after(this.graceMs, () => this.graceOver());
  }

  /** The extension's own command asks for the chat; `resolved`: its webview was resolved
   * in this page already. Returns whether the opening input has the user's typing (the
   * command leaves the focus to it then). */
  commanded(resolved: boolean): boolean {
    if (this.current === "shown") return !this.chatReady;
    // One input at a time: none while the last one's hide is on its way.
    if (this.resolvePending || this.closing || !this.host.enabled()) return false;
    if (this.current === "waiting") {
      this.stopTimer();
    } else if (resolved) {
      return false; // a kept, restored or ready chat: the webview takes it
    } else {
      this.resolvePending = true;
      this.chatReady = false;
    }
    this.show();
    return true;
  }

  private graceOver(): void {
    this.cancelTimer = null;
    if (this.current === "waiting") this.show();
  }

  private show(): void {
    this.current = "shown";
    this.host.showInput();
    this.host.note("shown");
  }

  /** The chat's webview said "ready" (its input takes typing). */
  ready(): void {
    if (this.current === "waiting") {
      this.stopTimer();
      this.current = "done";
      return;
    }
    if (this.current !== "shown" || this.chatReady) return;
    this.chatReady = true;
    if (this.host.inputValue().trim() === "") {
      this.finish("", true);
      this.host.focusChat();
      this.host.note("closed-empty");
    } else {
      this.host.inputReady();
      this.host.note("kept-draft");
    }
  }

  /** Enter in the native input. */
  accepted(): void {
    if (this.closing) {
      // Closed on our side (the chat got ready while it looked empty here), but the user
      // typed and pressed Enter before VS Code hid it: that is a prompt too.
      const value = this.host.inputValue();
      const late = (value.startsWith(this.closing.handled) ? value.slice(this.closing.handled.length) : value).trim();
      this.closing.handled = value;
      if (late) {
        this.host.send(late);
        this.host.focusChat();
        this.host.note("sent");
      }
      return;
    }
    if (this.current !== "shown") return;
    const text = this.host.inputValue().trim();
    if (!text) {
      if (this.chatReady) {
        this.finish(this.host.inputValue(), true);
        this.host.focusChat();
      }
      return;
    }
    this.finish(this.host.inputValue(), true);
    this.host.send(text);
    this.host.focusChat();
    this.host.note("sent");
  }

  /** The native input hid: Escape, it lost the focus, or we closed it. */
  hidden(): void {
    if (this.closing) {
      const { handled, focus } = this.closing;
      this.closing = null;
      const value = this.host.inputValue();
      const late = value.startsWith(handled) ? value.slice(handled.length) : value;
      if (late.trim()) this.moveDraft(late, focus);
      return;
    }
    if (this.current !== "shown") return;
    this.current = "done";
    this.moveDraft(this.host.inputValue(), true);
  }

  /** The chat's view was hidden (or disposed) before the chat took over: the draft goes
   * into the chat, which is not focused (it is not on screen). */
  viewHidden(): void {
    this.stepAside(false);
  }

  /** Something else wants the chat's own input (a mention is on its way to its composer):
   * the native input steps aside, its draft moved into the chat. */
  composerWanted(): void {
    this.stepAside(true);
  }

  private stepAside(focus: boolean): void {
    if (this.current === "waiting") {
      this.stopTimer();
      this.current = "done";
      return;
    }
    if (this.current !== "shown") return;
    const text = this.host.inputValue();
    this.finish(text, focus);
    this.moveDraft(text, focus);
  }

  /** The draft (if any) into the chat's input. */
  private moveDraft(text: string, focus: boolean): void {
    if (text.trim()) {
      this.host.moveDraft(text, focus);
      this.host.note("moved-draft");
    } else {
      this.host.note("dismissed");
    }
  }

  /** Closes the input on our side: `handled` is the text taken care of; its hide event
   * (the state "done" then) moves anything typed after it. */
  private finish(handled: string, focus: boolean): void {
    this.current = "done";
    this.closing = { handled, focus };
    this.host.closeInput();
  }

  private stopTimer(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
  }
}
