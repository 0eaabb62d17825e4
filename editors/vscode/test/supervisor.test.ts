// The agent supervisor with a fake VS Code side and a fake agent process.

import assert from "node:assert/strict";
import { test } from "node:test";
import { AgentNotInstalled, UntrustedWorkspace } from "../src/agentCommand";
import type { AgentProcessOptions, ClientHandlers } from "../src/agentProcess";
import { readSettings } from "../src/settings";
import { AgentSupervisor, type SupervisorHost } from "../src/supervisor";
import { FakeAgent, fakeSurface, notices, recordMetrics, until, type FakeSurface } from "./fakes";

interface Rig {
  supervisor: AgentSupervisor;
  fake: FakeSurface;
  launched: Omit<AgentProcessOptions, "spawn">[];
  agents: FakeAgent[];
  events: string[];
  warnings: string[];
  host: SupervisorHost & {
    trusted: boolean;
    config: Record<string, unknown>;
    key: string | undefined;
    clock: number;
    stored: Record<string, string>;
    found: Record<string, string>[];
  };
}

function rig(next: () => FakeAgent = () => new FakeAgent()): Rig {
  const fake = fakeSurface();
  const launched: Omit<AgentProcessOptions, "spawn">[] = [];
  const agents: FakeAgent[] = [];
  const events: string[] = [];
  const warnings: string[] = [];
  const host = {
    trusted: true,
    config: { command: "/bin/adk-acp" } as Record<string, unknown>,
    key: undefined as string | undefined,
    clock: 1000,
    stored: {} as Record<string, string>,
    found: [] as Record<string, string>[],
    secretEnv: async () => host.stored,
    secretsInSettings: (found: Record<string, string>) => void host.found.push(found),
    isTrusted: () => host.trusted,
    settings: () => readSettings((k) => host.config[k]),
    workspaceFolders: () => ["/w"],
    cwd: () => "/w",
    apiKey: async () => host.key,
    env: { PATH: "/nowhere", HOME: "/home/u" },
    isExecutable: () => false,
    launch: (options: Omit<AgentProcessOptions, "spawn">) => {
      launched.push(options);
      const agent = next();
      agent.onExit = options.onExit;
      agents.push(agent);
      return agent;
    },
    showError: (message: string, actions: string[]) => {
      fake.errors.push({ message, actions });
      return Promise.resolve(fake.errorChoice);
    },
    showWarning: (message: string) => void warnings.push(message),
    metric: recordMetrics().metric,
    now: () => host.clock,
    pause: async () => undefined,
  };
  const supervisor = new AgentSupervisor(host, fake.surface, {
    handlers: {} as ClientHandlers,
    lost: () => events.push("lost"),
    crashed: () => events.push("crashed"),
    resume: async () => {
      events.push("resume");
      await supervisor.ensureAgent();
    },
  });
  return { supervisor, fake, launched, agents, events, warnings, host };
}

test("no agent in an untrusted workspace, nor with settings that need a fix", async () => {
  const r = rig();
  r.host.trusted = false;
  await assert.rejects(r.supervisor.ensureAgent(), UntrustedWorkspace);
  r.host.trusted = true;
  r.host.config = { args: "--model x" };
  await assert.rejects(r.supervisor.ensureAgent(), /settings need a fix/);
  r.host.config = {};
  await assert.rejects(r.supervisor.ensureAgent(), AgentNotInstalled);
  assert.equal(r.launched.length, 0);
});

test("starts once for concurrent callers, with the stored API key and the settings' env", async () => {
  const r = rig();
  r.host.key = "secret-key";
  r.host.config = { command: "/bin/adk-acp", args: ["--model", "m"], env: { EXTRA: "1" } };
  const [a, b] = await Promise.all([r.supervisor.ensureAgent(), r.supervisor.ensureAgent()]);
  assert.equal(a, b);
  assert.equal(r.launched.length, 1);
  const options = r.launched[0]!;
  assert.equal(options.command, "/bin/adk-acp");
  assert.deepEqual(options.args, ["--model", "m"]);
  assert.equal(options.env["GEMINI_API_KEY"], "secret-key");
  assert.equal(options.env["EXTRA"], "1");
  assert.equal(options.env["HOME"], "/home/u");
  assert.equal(options.cwd, "/w");
  assert.deepEqual(options.secrets(), ["secret-key"]);
  assert.match(r.fake.status.at(-1)!, /· idle$/);
  assert.ok(r.fake.status.some((s) => s.endsWith("· starting")));
  assert.equal(await r.supervisor.ensureAgent(), a, "a live agent is reused");
});

test("a failed start says why, with the last stderr lines, and stops the process", async () => {
  const r = rig(() => {
    const agent = new FakeAgent();
    agent.startError = new Error("initialize failed");
    agent.tail = ["", "ModuleNotFoundError: google"];
    return agent;
  });
  await assert.rejects(r.supervisor.ensureAgent(), /could not start \(\/bin\/adk-acp\): initialize failed\. Last output: ModuleNotFoundError: google/);
  assert.equal(r.agents[0]!.stopped, 1);
  assert.match(r.fake.status.at(-1)!, /· stopped$/);
});

test("a crash restarts the agent, at most three times a minute", async () => {
  const r = rig();
  await r.supervisor.ensureAgent();
  for (let crash = 1; crash <= 3; crash++) {
    r.agents.at(-1)!.exit({ code: 1, stderrTail: ["boom"] });
    await until(() => r.agents.length === crash + 1 && r.agents.at(-1)!.initialize !== null, `restart ${crash}`);
  }
  assert.deepEqual(r.events.slice(0, 3), ["lost", "crashed", "resume"]);
  assert.equal(r.warnings.length, 3);
  assert.match(notices(r.fake.surface)[0]!, /The agent stopped \(exit code 1\); restarting it\. Last output: boom/);
  r.agents.at(-1)!.exit({ signal: "SIGKILL" });
  assert.equal(r.agents.length, 4, "the fourth crash in a minute is not restarted");
  assert.match(notices(r.fake.surface).at(-1)!, /killed by SIGKILL\) and was not restarted/);
  assert.deepEqual(r.fake.errors.at(-1)!.actions, ["Restart", "Show Log"]);
  assert.equal(r.supervisor.current, null);
  // A minute later the budget is back.
  r.host.clock += 61_000;
  await r.supervisor.ensureAgent();
  r.agents.at(-1)!.exit({ code: 2 });
  await until(() => r.agents.length === 6, "a restart after a quiet minute");
});

test("an intended stop, a spawn error and a death while starting do not restart", async () => {
  const r = rig();
  const agent = (await r.supervisor.ensureAgent()) as FakeAgent;
  agent.exit({ intended: true });
  assert.deepEqual(r.events, ["lost"]);
  const second = (await r.supervisor.ensureAgent()) as FakeAgent;
  second.exit({ spawnError: "spawn ENOENT" });
  assert.match(notices(r.fake.surface).at(-1)!, /stopped \(spawn ENOENT\) and was not restarted/);
  const third = new FakeAgent();
  third.onExit = r.launched[0]!.onExit;
  third.exit(); // not the current agent: ignored
  assert.equal(r.agents.length, 2);
});

test("Restart Agent stops the agent and resumes with a fresh budget; dispose stops it for good", async () => {
  const r = rig();
  const first = (await r.supervisor.ensureAgent()) as FakeAgent;
  await r.supervisor.restart();
  assert.equal(first.stopped, 1);
  assert.equal(r.agents.length, 2);
  assert.deepEqual(r.events, ["resume"]);
  r.supervisor.dispose();
  assert.equal(r.agents[1]!.stopped, 1);
  r.agents[1]!.exit();
  assert.deepEqual(r.events, ["resume", "lost"], "no restart after dispose");
});

test("a secret in adkAcp.env starts the agent, with the warning that offers to move it; stored ones are used", async () => {
  const r = rig();
  r.host.config = { command: "/bin/adk-acp", env: { GEMINI_API_KEY: "key-in-settings", GEMINI_MODEL: "m" } };
  r.host.stored = { GITHUB_TOKEN: "from-secret-storage" };
  await r.supervisor.ensureAgent();
  const options = r.launched[0]!;
  assert.equal(options.env["GEMINI_API_KEY"], "key-in-settings");
  assert.equal(options.env["GITHUB_TOKEN"], "from-secret-storage");
  assert.deepEqual(r.host.found, [{ GEMINI_API_KEY: "key-in-settings" }]);
  assert.deepEqual(options.secrets().sort(), ["from-secret-storage", "key-in-settings"]);
});
