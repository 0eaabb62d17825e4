// Secrets found in `adkAcp.env` (issue 36): the agent starts with them, and the user is
// warned once and offered to move them to VS Code's secret storage in one click. The
// Gemini API key goes where "Set Gemini API Key" keeps it; any other secret into one
// secret-storage entry of environment variables the agent is started with. The setting
// then loses those names, wherever it was set (user, workspace, folder).

import { SECRET_KEY } from "./apiKey";

export const SECRET_ENV_KEY = "adkAcp.secretEnv";

export interface SecretSettingsHost {
  secretGet(name: string): PromiseLike<string | undefined>;
  secretStore(name: string, value: string): PromiseLike<void>;
  /** Removes these names from `adkAcp.env` in every scope that sets them. */
  removeFromEnvSetting(names: string[]): PromiseLike<void>;
  /** A warning with buttons; resolves with the button clicked. */
  showWarning(message: string, buttons: string[]): PromiseLike<string | undefined>;
  showInfo(message: string): void;
}

export const MOVE = "Move to Secret Storage";

export class SecretSettings {
  private readonly warned = new Set<string>();

  constructor(private readonly host: SecretSettingsHost) {}

  /** The environment variables kept in secret storage (not the API key). */
  async env(): Promise<Record<string, string>> {
    const stored = await this.host.secretGet(SECRET_ENV_KEY);
    if (!stored) return {};
    try {
      const parsed = JSON.parse(stored) as unknown;
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return {};
      return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string"));
    } catch {
      return {};
    }
  }

  /** The agent started with secrets from settings: warn once per name, offer to move them. */
  async warn(found: Record<string, string>): Promise<boolean> {
    const names = Object.keys(found).filter((n) => !this.warned.has(n));
    if (names.length === 0) return false;
    for (const name of names) this.warned.add(name);
    const which = names.map((n) => `adkAcp.env.${n}`).join(", ");
    const choice = await this.host.showWarning(
      `adk-acp: ${which} ${names.length > 1 ? "are secrets" : "is a secret"} in plain-text settings. ` +
        `The agent uses ${names.length > 1 ? "them" : "it"}; move ${names.length > 1 ? "them" : "it"} to VS Code's secret storage?`,
      [MOVE],
    );
    if (choice !== MOVE) return false;
    await this.move(Object.fromEntries(names.map((n) => [n, found[n]!])));
    return true;
  }

  /** Stores the secrets in secret storage, then removes them from the setting. */
  async move(secrets: Record<string, string>): Promise<void> {
    const rest = { ...(await this.env()) };
    for (const [name, value] of Object.entries(secrets)) {
      if (name === "GEMINI_API_KEY") await this.host.secretStore(SECRET_KEY, value);
      else rest[name] = value;
    }
    if (Object.keys(rest).length) await this.host.secretStore(SECRET_ENV_KEY, JSON.stringify(rest));
    await this.host.removeFromEnvSetting(Object.keys(secrets));
    this.host.showInfo(`adk-acp: ${Object.keys(secrets).join(", ")} moved to secret storage and removed from the settings.`);
  }
}
