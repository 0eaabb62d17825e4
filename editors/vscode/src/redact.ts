// Secrets never reach the log: API keys, bearer tokens and private keys are replaced by ***.

const PATTERNS: RegExp[] = [
  /AIza[0-9A-Za-z_-]{30,}/g, // Google API keys
  /\bsk-(?:ant-|proj-)?[0-9A-Za-z_-]{16,}/g, // OpenAI / Anthropic
  /\bgh[pousr]_[0-9A-Za-z]{20,}/g, // GitHub tokens
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key ids
  /(Bearer\s+)[0-9A-Za-z._~+/=-]{8,}/gi,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
];

/** Names whose values are secrets wherever they appear as a JSON key or an env entry. */
const SECRET_KEY = /("(?:api[-_]?key|[A-Z0-9_]*_API_KEY|[A-Z0-9_]*TOKEN|[A-Z0-9_]*SECRET[A-Z0-9_]*|password)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi;

export function redact(text: string, extra: readonly string[] = []): string {
  let out = text;
  for (const secret of extra) {
    if (secret.length >= 6) out = out.split(secret).join("***");
  }
  out = out.replace(SECRET_KEY, '$1"***"');
  for (const pattern of PATTERNS) {
    out = out.replace(pattern, (match: string, prefix?: unknown) =>
      typeof prefix === "string" && /^Bearer/i.test(prefix) ? `${prefix}***` : "***",
    );
  }
  return out;
}
