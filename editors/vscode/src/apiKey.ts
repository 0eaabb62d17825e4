// The Gemini API key in VS Code's secret storage (never in settings): asked for once
// when the agent has no credentials (unless `adkAcp.askForApiKey` is off), set and
// forgotten by commands. The VS Code side is injected (KeyHost).

export const SECRET_KEY = "adkAcp.geminiApiKey";

export interface KeyHost {
  secretGet(name: string): PromiseLike<string | undefined>;
  secretStore(name: string, value: string): PromiseLike<void>;
  secretDelete(name: string): PromiseLike<void>;
  /** A password input box; undefined when dismissed. */
  input(options: { title: string; prompt?: string }): PromiseLike<string | undefined>;
  /** The `adkAcp.askForApiKey` setting. */
  askAllowed(): boolean;
  showInfo(message: string): void;
}

export class ApiKeyStore {
  constructor(private readonly host: KeyHost) {}

  get(): PromiseLike<string | undefined> {
    return this.host.secretGet(SECRET_KEY);
  }

  /** Asks for a key after an auth_required; true when one was stored. */
  async ask(): Promise<boolean> {
    if (!this.host.askAllowed()) return false;
    const key = await this.host.input({
      title: "adk-acp needs a Gemini API key",
      prompt: "Kept in VS Code's secret storage, never in settings. (Or set GEMINI_API_KEY, or run `adk-acp --login`.)",
    });
    if (!key) return false;
    await this.host.secretStore(SECRET_KEY, key.trim());
    return true;
  }

  /** "Set Gemini API Key"; true when one was stored. */
  async set(): Promise<boolean> {
    const key = await this.host.input({ title: "Gemini API key for adk-acp" });
    if (!key) return false;
    await this.host.secretStore(SECRET_KEY, key.trim());
    return true;
  }

  async forget(): Promise<void> {
    await this.host.secretDelete(SECRET_KEY);
    this.host.showInfo("adk-acp: the API key is forgotten.");
  }
}
