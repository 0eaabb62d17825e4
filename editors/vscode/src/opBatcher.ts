// The chat view's outgoing queue (no VS Code API: the unit tests drive it). Transcript
// operations that arrive together (a burst of streamed chunks) cross to the webview as
// one message after a few milliseconds; anything else goes at once, after them, in order.
// The operations are values (ChatModel copies each item it sends), so a batch that waits
// holds what the model said then, not what it says when the batch leaves.

import type { ToView } from "./messages";

export interface BatchTimer {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimer: BatchTimer = {
  set: (run, ms) => setTimeout(run, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export class OpBatcher {
  private batch: ToView[] = [];
  private timer: unknown = null;

  constructor(
    private readonly send: (message: ToView) => void,
    private readonly delayMs = 4,
    private readonly clock: BatchTimer = realTimer,
  ) {}

  post(message: ToView): void {
    const last = this.batch[this.batch.length - 1];
    if (message.type === "ops" && last?.type === "ops") {
      last.ops.push(...message.ops);
    } else {
      this.batch.push(message.type === "ops" ? { type: "ops", ops: [...message.ops] } : message);
    }
    if (message.type !== "ops") this.flush();
    else if (this.timer === null) this.timer = this.clock.set(() => this.flush(), this.delayMs);
  }

  flush(): void {
    if (this.timer !== null) this.clock.clear(this.timer);
    this.timer = null;
    const messages = this.batch;
    this.batch = [];
    for (const message of messages) this.send(message);
  }

  /** Drops what waits (the webview went away: it gets a snapshot when it is back). */
  drop(): void {
    if (this.timer !== null) this.clock.clear(this.timer);
    this.timer = null;
    this.batch = [];
  }
}
