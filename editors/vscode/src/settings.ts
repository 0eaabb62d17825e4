// The extension's settings, checked: a wrong type or value gets a message that names the
// setting, what is wrong and what it should be, instead of a failed start later. A secret
// in `adkAcp.env` (a name like *_API_KEY, *_TOKEN) is used, and named in `secrets` so the
// user is warned and offered to move it to secret storage (settingsSecrets.ts).

export interface Settings {
  command: string;
  args: string[];
  env: Record<string, string>;
  askForApiKey: boolean;
  /** A native input takes typing while the chat's view is made on its first open. */
  quickInputWhileOpening: boolean;
}

export const DEFAULTS: Settings = { command: "", args: [], env: {}, askForApiKey: true, quickInputWhileOpening: true };

const typeName = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "a list" : typeof value === "object" ? "an object" : `a ${typeof value}`;

export const SECRET_NAMES = /(^|_)(API_?KEY|TOKEN|SECRET|PASSWORD)$/i;

export interface ReadSettings {
  settings: Settings;
  problems: string[];
  /** Names in `adkAcp.env` that look like secrets (their values are in `settings.env`). */
  secrets?: string[];
}

/** Reads the settings through `get` (VS Code's configuration); problems keep the default. */
export function readSettings(get: (key: keyof Settings) => unknown): ReadSettings {
  const problems: string[] = [];
  const secrets: string[] = [];
  const settings: Settings = { ...DEFAULTS, args: [], env: {} };

  const command = get("command");
  if (command === undefined || command === null) {
    // default
  } else if (typeof command !== "string") {
    problems.push(`adkAcp.command must be a string (the agent's program), not ${typeName(command)}.`);
  } else if (/\s/.test(command.trim()) && !/[\\/]/.test(command)) {
    problems.push(
      `adkAcp.command is "${command}": put only the program there and its arguments in adkAcp.args ` +
        `(for example "adk-acp" and ["--model", "gemini-2.5-flash"]).`,
    );
  } else {
    settings.command = command;
  }

  const args = get("args");
  if (args !== undefined && args !== null) {
    if (!Array.isArray(args)) {
      problems.push(`adkAcp.args must be a list of strings, for example ["--model", "gemini-2.5-flash"], not ${typeName(args)}.`);
    } else {
      const bad = args.findIndex((a) => typeof a !== "string");
      if (bad >= 0) problems.push(`adkAcp.args must hold only strings: item ${bad + 1} is ${typeName(args[bad])}.`);
      else settings.args = args as string[];
    }
  }

  const env = get("env");
  if (env !== undefined && env !== null) {
    if (typeof env !== "object" || Array.isArray(env)) {
      problems.push(`adkAcp.env must be an object of names to strings, for example {"GEMINI_MODEL": "gemini-2.5-flash"}, not ${typeName(env)}.`);
    } else {
      for (const [name, value] of Object.entries(env as Record<string, unknown>)) {
        if (typeof value !== "string") {
          problems.push(`adkAcp.env.${name} must be a string, not ${typeName(value)}.`);
        } else if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
          problems.push(`adkAcp.env has "${name}", which is not a valid environment variable name.`);
        } else {
          if (SECRET_NAMES.test(name)) secrets.push(name);
          settings.env[name] = value;
        }
      }
    }
  }

  for (const key of ["askForApiKey", "quickInputWhileOpening"] as const) {
    const value = get(key);
    if (value === undefined || value === null) continue;
    if (typeof value !== "boolean") problems.push(`adkAcp.${key} must be true or false, not ${typeName(value)}.`);
    else settings[key] = value;
  }
  return { settings, problems, ...(secrets.length ? { secrets } : {}) };
}
