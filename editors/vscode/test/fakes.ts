// Fakes of the VS Code side for the pieces' unit tests (not a test file itself).

import type * as acp from "@agentclientprotocol/sdk/unstable";
import type { ExitInfo } from "../src/agentProcess";
import { ChatSurface, type Log, type SurfaceHost } from "../src/chatSurface";
import type { ToView } from "../src/messages";
import type { Metric } from "../src/metrics";
import type { RunningAgent } from "../src/supervisor";

export class FakeLog implements Log {
  lines: string[] = [];
  shown = 0;
  info(m: string): void {
    this.lines.push(`info ${m}`);
  }
  warn(m: string): void {
    this.lines.push(`warn ${m}`);
  }
  error(m: string): void {
    this.lines.push(`error ${m}`);
  }
  show(): void {
    this.shown++;
  }
}

export interface FakeSurface {
  surface: ChatSurface;
  log: FakeLog;
  /** Every message to the webview. */
  posted: ToView[];
  status: string[];
  context: Map<string, boolean>;
  errors: { message: string; actions: string[] }[];
  /** The button the next error notifications answer with. */
  errorChoice: string | undefined;
  opened: string[];
}

export function fakeSurface(): FakeSurface {
  const fake: FakeSurface = {
    log: new FakeLog(),
    posted: [],
    status: [],
    context: new Map(),
    errors: [],
    errorChoice: undefined,
    opened: [],
    surface: null as unknown as ChatSurface,
  };
  const host: SurfaceHost = {
    log: fake.log,
    showStatus: (text) => fake.status.push(text),
    setContext: (key, value) => fake.context.set(key, value),
    showError: (message, actions) => {
      fake.errors.push({ message, actions });
      return Promise.resolve(fake.errorChoice);
    },
    openSettings: () => fake.opened.push("settings"),
    manageTrust: () => fake.opened.push("trust"),
  };
  fake.surface = new ChatSurface(host);
  fake.surface.view = { post: (m) => fake.posted.push(structuredClone(m)) };
  return fake;
}

/** The notices of the chat's transcript. */
export function notices(surface: ChatSurface): string[] {
  return surface.model.items.filter((i) => i.kind === "notice").map((i) => (i.kind === "notice" ? i.text : ""));
}

export function recordMetrics(): { metric: Metric; seen: { name: string; value: number; extra?: Record<string, unknown> }[] } {
  const seen: { name: string; value: number; extra?: Record<string, unknown> }[] = [];
  return { seen, metric: (name, value, extra) => seen.push({ name, value, ...(extra ? { extra } : {}) }) };
}

type Answer = (params: Record<string, unknown>) => unknown;

/** An agent whose answers the test scripts, method by method (a function may throw). */
export class FakeAgent implements RunningAgent {
  alive = true;
  initialize: acp.InitializeResponse | null = null;
  stopped = 0;
  requests: { method: string; params: Record<string, unknown> }[] = [];
  notifications: { method: string; params: unknown }[] = [];
  startError: Error | null = null;
  tail: string[] = [];
  onExit: ((info: ExitInfo) => void) | null = null;

  constructor(
    readonly answers: Record<string, Answer> = {},
    private readonly capabilities: acp.AgentCapabilities = {},
  ) {}

  get agent(): acp.ClientContext {
    return {
      request: async (method: string, params: Record<string, unknown>) => {
        this.requests.push({ method, params });
        const answer = this.answers[method];
        if (!answer) throw new Error(`unexpected ${method}`);
        return answer(params);
      },
      notify: async (method: string, params: unknown) => {
        this.notifications.push({ method, params });
      },
    } as unknown as acp.ClientContext;
  }

  async start(): Promise<unknown> {
    if (this.startError) throw this.startError;
    this.initialize = { protocolVersion: 1, agentCapabilities: this.capabilities };
    return this.initialize;
  }

  stop(): void {
    this.stopped++;
    this.alive = false;
  }

  stderrTail(): string[] {
    return this.tail;
  }

  /** The process ends (a crash unless `intended`). */
  exit(info: Partial<ExitInfo> = {}): void {
    this.alive = false;
    this.onExit?.({ code: 1, signal: null, stderrTail: [], intended: false, ...info });
  }

  methods(): string[] {
    return this.requests.map((r) => r.method);
  }
}

/** Resolves once `check` holds (polling the event loop; generous bound). */
export async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
