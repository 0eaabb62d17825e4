// Virtual documents for the diff editor: the file as it is ("original") and as the
// agent proposes it ("proposed"), served by a TextDocumentContentProvider under two
// URI schemes. Each proposal has its own id so two asks about one file do not clash.

import * as path from "node:path";

export const ORIGINAL_SCHEME = "adk-acp-original";
export const PROPOSED_SCHEME = "adk-acp-proposed";

export interface UriLike {
  scheme: string;
  path: string;
  query: string;
  toString(): string;
}

export interface UriFactory {
  from(components: { scheme: string; path: string; query: string }): UriLike;
}

export interface Proposal {
  id: string;
  filePath: string;
  original: UriLike;
  proposed: UriLike;
  title: string;
  isNew: boolean;
}

export class DiffStore {
  private readonly contents = new Map<string, string>();
  private counter = 0;

  constructor(private readonly uris: UriFactory) {}

  private key(scheme: string, id: string): string {
    return `${scheme}:${id}`;
  }

  private readonly bySignature = new Map<string, Proposal>();

  private signature(filePath: string, oldText: string | null | undefined, newText: string): string {
    return JSON.stringify([filePath, oldText ?? null, newText]);
  }

  /**
   * The proposal for this change, made once: a tool call announces its diff before the
   * permission request, so the documents can be loaded ahead and the diff editor opens
   * faster when the question comes.
   */
  prepare(filePath: string, oldText: string | null | undefined, newText: string): Proposal {
    return this.bySignature.get(this.signature(filePath, oldText, newText)) ?? this.add(filePath, oldText, newText);
  }

  add(filePath: string, oldText: string | null | undefined, newText: string): Proposal {
    const id = String(++this.counter);
    const uriPath = filePath.startsWith("/") ? filePath : `/${filePath.replace(/\\/g, "/")}`;
    const original = this.uris.from({ scheme: ORIGINAL_SCHEME, path: uriPath, query: `id=${id}` });
    const proposed = this.uris.from({ scheme: PROPOSED_SCHEME, path: uriPath, query: `id=${id}` });
    this.contents.set(this.key(ORIGINAL_SCHEME, id), oldText ?? "");
    this.contents.set(this.key(PROPOSED_SCHEME, id), newText);
    const name = path.basename(filePath);
    const isNew = oldText == null;
    const title = isNew ? `${name} (new file, proposed by the agent)` : `${name} ↔ proposed by the agent`;
    const proposal = { id, filePath, original, proposed, title, isNew };
    this.bySignature.set(this.signature(filePath, oldText, newText), proposal);
    return proposal;
  }

  /** TextDocumentContentProvider.provideTextDocumentContent. */
  provide(uri: UriLike): string {
    const id = new URLSearchParams(uri.query).get("id") ?? "";
    return this.contents.get(this.key(uri.scheme, id)) ?? "";
  }

  has(uri: UriLike): boolean {
    const id = new URLSearchParams(uri.query).get("id") ?? "";
    return this.contents.has(this.key(uri.scheme, id));
  }

  remove(proposal: Proposal): void {
    for (const [key, value] of this.bySignature) if (value === proposal) this.bySignature.delete(key);
    this.contents.delete(this.key(ORIGINAL_SCHEME, proposal.id));
    this.contents.delete(this.key(PROPOSED_SCHEME, proposal.id));
  }

  get size(): number {
    return this.contents.size / 2;
  }
}
