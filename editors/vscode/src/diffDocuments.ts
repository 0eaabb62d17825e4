// Virtual documents for the diff editor: the file as it is ("original") and as the
// agent proposes it ("proposed"), served by a TextDocumentContentProvider under two
// URI schemes. Each proposal has its own id so two asks about one file do not clash.
// When the agent takes the user's version of an edit (`editReview`, issue 36), the
// proposed side is an editable document instead (REVIEW_SCHEME, an in-memory file
// system): the user changes it, reverts hunks, and "Allow" sends what it holds.

import * as path from "node:path";

export const ORIGINAL_SCHEME = "adk-acp-original";
export const PROPOSED_SCHEME = "adk-acp-proposed";
export const REVIEW_SCHEME = "adk-acp-review";

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
  /** The proposed side is editable (REVIEW_SCHEME): the user's version goes with "Allow". */
  editable: boolean;
}

/** A proposal's id from one of its URIs (`?id=` or, in REVIEW_SCHEME, the first path segment). */
export function proposalId(uri: UriLike): string {
  if (uri.scheme === REVIEW_SCHEME) return uri.path.split("/")[1] ?? "";
  return new URLSearchParams(uri.query).get("id") ?? "";
}

export class DiffStore {
  private readonly contents = new Map<string, string>();
  /** The editable proposed sides as last saved (the user's version), by proposal id. */
  private readonly saved = new Map<string, string>();
  private counter = 0;

  constructor(
    private readonly uris: UriFactory,
    /** Whether new proposals are editable (the agent declared `editReview`). */
    private readonly editable: () => boolean = () => false,
  ) {}

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
    const editable = this.editable();
    const proposed = editable
      ? this.uris.from({ scheme: REVIEW_SCHEME, path: `/${id}${uriPath}`, query: "" })
      : this.uris.from({ scheme: PROPOSED_SCHEME, path: uriPath, query: `id=${id}` });
    this.contents.set(this.key(ORIGINAL_SCHEME, id), oldText ?? "");
    this.contents.set(this.key(PROPOSED_SCHEME, id), newText);
    const name = path.basename(filePath);
    const isNew = oldText == null;
    const title = (isNew ? `${name} (new file, proposed by the agent)` : `${name} ↔ proposed by the agent`) + (editable ? " — yours to change" : "");
    const proposal = { id, filePath, original, proposed, title, isNew, editable };
    this.bySignature.set(this.signature(filePath, oldText, newText), proposal);
    return proposal;
  }

  private keyOf(uri: UriLike): string {
    return this.key(uri.scheme === REVIEW_SCHEME ? PROPOSED_SCHEME : uri.scheme, proposalId(uri));
  }

  /** TextDocumentContentProvider.provideTextDocumentContent (and the review file system's read). */
  provide(uri: UriLike): string {
    const saved = uri.scheme === REVIEW_SCHEME ? this.saved.get(proposalId(uri)) : undefined;
    return saved ?? this.contents.get(this.keyOf(uri)) ?? "";
  }

  has(uri: UriLike): boolean {
    return this.contents.has(this.keyOf(uri));
  }

  /** The review file system's write (a save of the editable proposed side); false when the proposal is gone. */
  write(uri: UriLike, text: string): boolean {
    if (uri.scheme !== REVIEW_SCHEME || !this.has(uri)) return false;
    this.saved.set(proposalId(uri), text);
    return true;
  }

  /** The text of one side as the agent sent it (the proposal's, not the user's changes). */
  agentText(proposal: Proposal, side: "original" | "proposed"): string {
    return this.contents.get(this.key(side === "original" ? ORIGINAL_SCHEME : PROPOSED_SCHEME, proposal.id)) ?? "";
  }

  /** The proposal one of whose URIs this is. */
  find(uri: UriLike): Proposal | undefined {
    const id = proposalId(uri);
    for (const proposal of this.bySignature.values()) if (proposal.id === id) return proposal;
    return undefined;
  }

  remove(proposal: Proposal): void {
    for (const [key, value] of this.bySignature) if (value === proposal) this.bySignature.delete(key);
    this.contents.delete(this.key(ORIGINAL_SCHEME, proposal.id));
    this.contents.delete(this.key(PROPOSED_SCHEME, proposal.id));
    this.saved.delete(proposal.id);
  }

  get size(): number {
    return this.contents.size / 2;
  }
}
