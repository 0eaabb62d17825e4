// Which program to start as the agent: the setting, else `adk-acp` on PATH, else the
// workspace's `.venv/bin/adk-acp`.

import * as path from "node:path";

export interface CommandChoice {
  command: string;
  args: string[];
  source: "setting" | "path" | "workspace-venv";
}

export class AgentNotInstalled extends Error {
  constructor(readonly searched: string[]) {
    super(
      "adk-acp is not installed: it is neither on PATH nor in the workspace's .venv. " +
        "Install it (`uv tool install .` or `pipx install .` in an adk-acp checkout) " +
        "or set `adkAcp.command`.",
    );
  }
}

export class UntrustedWorkspace extends Error {
  constructor() {
    super(
      "This workspace is not trusted, so adk-acp does not start its agent here (it reads, edits and runs commands). " +
        "Trust the workspace (Manage Workspace Trust) to chat.",
    );
  }
}

export function resolveAgentCommand(options: {
  setting: string;
  args: readonly string[];
  pathEnv: string | undefined;
  workspaceFolders: readonly string[];
  isExecutable: (file: string) => boolean;
  platform?: NodeJS.Platform;
}): CommandChoice {
  const args = [...options.args];
  if (options.setting.trim()) return { command: options.setting.trim(), args, source: "setting" };
  const windows = (options.platform ?? process.platform) === "win32";
  const names = windows ? ["adk-acp.exe", "adk-acp.cmd", "adk-acp"] : ["adk-acp"];
  const searched: string[] = [];
  for (const dir of (options.pathEnv ?? "").split(path.delimiter)) {
    if (!dir) continue;
    for (const name of names) {
      const file = path.join(dir, name);
      searched.push(file);
      if (options.isExecutable(file)) return { command: file, args, source: "path" };
    }
  }
  for (const folder of options.workspaceFolders) {
    const file = windows
      ? path.join(folder, ".venv", "Scripts", "adk-acp.exe")
      : path.join(folder, ".venv", "bin", "adk-acp");
    searched.push(file);
    if (options.isExecutable(file)) return { command: file, args, source: "workspace-venv" };
  }
  throw new AgentNotInstalled(searched);
}

/**
 * A multi-root workspace as one session: the first folder on disk is the agent's cwd, the
 * other ones on disk its additional directories (when the agent supports them).
 */
export function sessionRoots(
  folders: readonly { scheme: string; fsPath: string }[],
  supportsAdditional: boolean,
): { cwd: string | undefined; additionalDirectories?: string[] } {
  const local = folders.filter((f) => f.scheme === "file").map((f) => f.fsPath);
  const [cwd, ...rest] = local;
  return rest.length && supportsAdditional ? { cwd, additionalDirectories: rest } : { cwd };
}
