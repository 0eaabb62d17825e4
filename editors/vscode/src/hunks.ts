// The hunks of an edit under review (issue 36): which lines of the proposed file differ
// from the file as it is, each hunk accepted or rejected on its own (the CodeLens above
// it). A rejected hunk puts the original lines back into the proposed document; "Allow"
// then writes what the proposed document holds. Lines are compared without their line
// endings, so an editor's normalized document matches the agent's text.

export interface Hunk {
  /** The hunk's lines in the original: [start, end), 0-based. */
  originalStart: number;
  originalEnd: number;
  /** The hunk's lines in the proposed text: [start, end), 0-based. */
  proposedStart: number;
  proposedEnd: number;
}

/** The lines of `text`, without their endings (a final line break ends the last line). */
export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split(/\r\n|\r|\n/);
  if (/(\r\n|\r|\n)$/.test(text)) lines.pop();
  return lines;
}

const MAX_TABLE = 4_000_000;

/** The hunks turning `original` into `proposed` (a longest common subsequence of lines). */
export function lineHunks(original: string, proposed: string): Hunk[] {
  const a = splitLines(original);
  const b = splitLines(proposed);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const n = endA - start;
  const m = endB - start;
  if (n === 0 && m === 0) return [];
  if (n * m > MAX_TABLE || n === 0 || m === 0) {
    return [{ originalStart: start, originalEnd: endA, proposedStart: start, proposedEnd: endB }];
  }
  // lengths[i][j]: the longest common subsequence of a[start+i..endA) and b[start+j..endB)
  const lengths = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lengths[i]![j] = a[start + i] === b[start + j] ? lengths[i + 1]![j + 1]! + 1 : Math.max(lengths[i + 1]![j]!, lengths[i]![j + 1]!);
    }
  }
  const hunks: Hunk[] = [];
  let open: Hunk | null = null;
  let i = 0;
  let j = 0;
  const close = (): void => {
    if (open) hunks.push(open);
    open = null;
  };
  while (i < n || j < m) {
    if (i < n && j < m && a[start + i] === b[start + j]) {
      close();
      i++;
      j++;
      continue;
    }
    open ??= { originalStart: start + i, originalEnd: start + i, proposedStart: start + j, proposedEnd: start + j };
    if (j < m && (i === n || lengths[i]![j + 1]! >= lengths[i + 1]![j]!)) {
      j++;
      open.proposedEnd = start + j;
    } else {
      i++;
      open.originalEnd = start + i;
    }
  }
  close();
  return hunks;
}

/** A hunk's identity while its text stays the same (the accepted ones are remembered by it). */
export function hunkKey(original: string, proposed: string, hunk: Hunk): string {
  const a = splitLines(original).slice(hunk.originalStart, hunk.originalEnd);
  const b = splitLines(proposed).slice(hunk.proposedStart, hunk.proposedEnd);
  return JSON.stringify([hunk.originalStart, a, b]);
}
