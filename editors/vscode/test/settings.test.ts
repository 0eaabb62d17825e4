import assert from "node:assert/strict";
import { test } from "node:test";
import { sessionRoots } from "../src/agentCommand";
import { EditHistory } from "../src/editHistory";
import { SECRET_KEY } from "../src/apiKey";
import { DEFAULTS, readSettings } from "../src/settings";
import { MOVE, SECRET_ENV_KEY, SecretSettings } from "../src/settingsSecrets";

const read = (values: Record<string, unknown>) => readSettings((key) => values[key]);

test("valid settings pass unchanged; missing ones take the defaults", () => {
  assert.deepEqual(read({}), { settings: DEFAULTS, problems: [] });
  const ok = read({ command: "/opt/adk-acp", args: ["--model", "m"], env: { GEMINI_MODEL: "m" }, askForApiKey: false, quickInputWhileOpening: false });
  assert.deepEqual(ok, {
    settings: { command: "/opt/adk-acp", args: ["--model", "m"], env: { GEMINI_MODEL: "m" }, askForApiKey: false, quickInputWhileOpening: false },
    problems: [],
  });
});

test("each wrong setting gets a message naming it and what it should be", () => {
  const { settings, problems } = read({
    command: "adk-acp --model x",
    args: "--model x",
    env: { GEMINI_MODEL: 3, "BAD NAME": "v", GEMINI_API_KEY: "sk" },
    askForApiKey: "yes",
    quickInputWhileOpening: 1,
  });
  assert.deepEqual(settings, { ...DEFAULTS, env: { GEMINI_API_KEY: "sk" } }); // a secret is used, and named
  assert.equal(problems.length, 6);
  assert.match(problems[0]!, /adkAcp\.command .*arguments in adkAcp\.args/);
  assert.match(problems[1]!, /adkAcp\.args must be a list of strings.*not a string/);
  assert.match(problems[2]!, /adkAcp\.env\.GEMINI_MODEL must be a string, not a number/);
  assert.match(problems[3]!, /not a valid environment variable name/);
  assert.match(problems[4]!, /askForApiKey must be true or false/);
  assert.match(problems[5]!, /adkAcp\.quickInputWhileOpening must be true or false, not a number/);
  assert.deepEqual(read({ env: { GEMINI_API_KEY: "sk", GITHUB_TOKEN: "t", X: "1" } }).secrets, ["GEMINI_API_KEY", "GITHUB_TOKEN"]);
  assert.match(read({ args: ["ok", 2] }).problems[0]!, /item 2 is a number/);
});

test("undo last agent edit: one entry per edit, newest first; a file changed since is refused", async () => {
  const disk = new Map<string, string>([["/w/a", "one"]]);
  const files = {
    read: async (p: string) => disk.get(p) ?? null,
    write: async (p: string, c: string) => void disk.set(p, c),
    remove: async (p: string) => void disk.delete(p),
  };
  const history = new EditHistory();
  disk.set("/w/a", "two");
  history.record({ path: "/w/a", before: "one", after: "two" });
  disk.set("/w/new", "fresh");
  history.record({ path: "/w/new", before: null, after: "fresh" });
  assert.deepEqual(await history.undo(files), { undone: { path: "/w/new", before: null, after: "fresh" } });
  assert.equal(disk.has("/w/new"), false);
  disk.set("/w/a", "two, and the user's typing");
  const refused = await history.undo(files);
  assert.ok("refused" in refused && /changed after the agent's edit/.test(refused.refused));
  assert.equal(history.size, 1);
  disk.set("/w/a", "two");
  assert.ok("undone" in (await history.undo(files)));
  assert.equal(disk.get("/w/a"), "one");
  assert.ok("refused" in (await history.undo(files)));
});

test("multi-root: the first folder on disk is the cwd, the others additional directories", () => {
  const folders = [
    { scheme: "file", fsPath: "/w/app" },
    { scheme: "vscode-vfs", fsPath: "/remote/x" },
    { scheme: "file", fsPath: "/w/lib" },
  ];
  assert.deepEqual(sessionRoots(folders, true), { cwd: "/w/app", additionalDirectories: ["/w/lib"] });
  assert.deepEqual(sessionRoots(folders, false), { cwd: "/w/app" });
  assert.deepEqual(sessionRoots(folders.slice(0, 1), true), { cwd: "/w/app" });
  assert.deepEqual(sessionRoots([], true), { cwd: undefined });
});

test("secrets in settings: one warning per name; one click moves them to secret storage and out of the setting", async () => {
  const stored = new Map<string, string>([[SECRET_ENV_KEY, JSON.stringify({ OLD_TOKEN: "o" })]]);
  const removed: string[][] = [];
  const warnings: string[] = [];
  let click: string | undefined = MOVE;
  const secrets = new SecretSettings({
    secretGet: async (n) => stored.get(n),
    secretStore: async (n, v) => void stored.set(n, v),
    removeFromEnvSetting: async (names) => void removed.push(names),
    showWarning: async (message) => {
      warnings.push(message);
      return click;
    },
    showInfo: () => undefined,
  });
  assert.equal(await secrets.warn({ GEMINI_API_KEY: "k", GITHUB_TOKEN: "t" }), true);
  assert.match(warnings[0]!, /adkAcp\.env\.GEMINI_API_KEY, adkAcp\.env\.GITHUB_TOKEN are secrets in plain-text settings/);
  assert.equal(stored.get(SECRET_KEY), "k");
  assert.deepEqual(await secrets.env(), { OLD_TOKEN: "o", GITHUB_TOKEN: "t" });
  assert.deepEqual(removed, [["GEMINI_API_KEY", "GITHUB_TOKEN"]]);
  assert.equal(await secrets.warn({ GEMINI_API_KEY: "k" }), false); // warned once
  assert.equal(warnings.length, 1);
  click = undefined;
  assert.equal(await secrets.warn({ OTHER_SECRET: "s" }), false); // dismissed: kept in settings
  assert.equal(removed.length, 1);
  stored.set(SECRET_ENV_KEY, "not json");
  assert.deepEqual(await secrets.env(), {});
});
