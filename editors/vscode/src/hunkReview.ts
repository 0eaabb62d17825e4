// Per-hunk review of an editable proposal (issue 36): a CodeLens "Accept" / "Reject"
// above each hunk of the proposed side that differs from the file. Reject puts the
// original lines back into the proposed document (as the diff gutter's revert arrow
// does); Accept keeps the hunk and hides its lenses. Hunks nobody touched are written
// as proposed. The VS Code side (CodeLens provider, the document edit) is in vscodeHost.ts.

import type { DiffStore, UriLike } from "./diffDocuments";
import { hunkKey, lineHunks, splitLines } from "./hunks";

export interface ReviewLens {
  /** The 0-based line of the proposed document the lenses stand above. */
  line: number;
  key: string;
  /** 1-based, among the hunks still to decide; and their number. */
  index: number;
  count: number;
}

function lineBreak(...texts: string[]): string {
  for (const text of texts) {
    const found = /\r\n|\r|\n/.exec(text);
    if (found) return found[0];
  }
  return "\n";
}

export class HunkReview {
  private readonly accepted = new Map<string, Set<string>>();

  constructor(private readonly diffs: DiffStore) {}

  private original(uri: UriLike): string | undefined {
    const proposal = this.diffs.find(uri);
    return proposal?.editable ? this.diffs.agentText(proposal, "original") : undefined;
  }

  /** The lenses for the editable proposed document `uri` holding `text`. */
  lenses(uri: UriLike, text: string): ReviewLens[] {
    const original = this.original(uri);
    if (original === undefined) return [];
    const done = this.accepted.get(uri.toString()) ?? new Set<string>();
    const open = lineHunks(original, text).filter((h) => !done.has(hunkKey(original, text, h)));
    const last = Math.max(0, splitLines(text).length - 1);
    return open.map((h, i) => ({
      line: Math.min(h.proposedStart, last),
      key: hunkKey(original, text, h),
      index: i + 1,
      count: open.length,
    }));
  }

  accept(uri: UriLike, key: string): void {
    const done = this.accepted.get(uri.toString()) ?? new Set<string>();
    done.add(key);
    this.accepted.set(uri.toString(), done);
  }

  /** The proposed document's whole text with the hunk `key` put back as it was; undefined when it is gone. */
  reject(uri: UriLike, text: string, key: string): string | undefined {
    const original = this.original(uri);
    if (original === undefined) return undefined;
    const hunk = lineHunks(original, text).find((h) => hunkKey(original, text, h) === key);
    if (!hunk) return undefined;
    const lines = splitLines(text);
    lines.splice(hunk.proposedStart, hunk.proposedEnd - hunk.proposedStart, ...splitLines(original).slice(hunk.originalStart, hunk.originalEnd));
    if (lines.length === 0) return "";
    const eol = lineBreak(text, original);
    const final = /(\r\n|\r|\n)$/.test(text) || (text === "" && /(\r\n|\r|\n)$/.test(original));
    return lines.join(eol) + (final ? eol : "");
  }
}
