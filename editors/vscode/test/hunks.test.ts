import assert from "node:assert/strict";
import { test } from "node:test";
import { DiffStore, type UriLike } from "../src/diffDocuments";
import { HunkReview } from "../src/hunkReview";
import { lineHunks, splitLines } from "../src/hunks";

const uris = {
  from: (c: { scheme: string; path: string; query: string }): UriLike => ({ ...c, toString: () => `${c.scheme}:${c.path}?${c.query}` }),
};

const lines = (...xs: string[]): string => xs.map((x) => `${x}\n`).join("");
const TEN = lines("1", "2", "3", "4", "5", "6", "7", "8", "9", "10");
const THREE = TEN.replace("2\n", "two\n").replace("5\n", "five\nmore\n").replace("9\n", "");

test("hunks: changed, inserted and deleted lines, line endings aside", () => {
  assert.deepEqual(splitLines("a\r\nb"), ["a", "b"]);
  assert.deepEqual(splitLines(""), []);
  assert.deepEqual(lineHunks(TEN, TEN.replace(/\n/g, "\r\n")), []);
  assert.deepEqual(lineHunks(TEN, THREE), [
    { originalStart: 1, originalEnd: 2, proposedStart: 1, proposedEnd: 2 },
    { originalStart: 4, originalEnd: 5, proposedStart: 4, proposedEnd: 6 },
    { originalStart: 8, originalEnd: 9, proposedStart: 9, proposedEnd: 9 },
  ]);
  assert.deepEqual(lineHunks("", "a\n"), [{ originalStart: 0, originalEnd: 0, proposedStart: 0, proposedEnd: 1 }]);
});

test("per-hunk review: Reject puts one hunk back, Accept hides its lenses, the rest stays proposed", () => {
  const store = new DiffStore(uris, () => true);
  const proposal = store.prepare("/w/a.txt", TEN, THREE);
  const review = new HunkReview(store);
  const lenses = review.lenses(proposal.proposed, THREE);
  assert.deepEqual(
    lenses.map((l) => [l.line, l.index, l.count]),
    [[1, 1, 3], [4, 2, 3], [9, 3, 3]], // a deletion: above the line after it,
  );
  const twoLanded = review.reject(proposal.proposed, THREE, lenses[1]!.key);
  assert.equal(twoLanded, TEN.replace("2\n", "two\n").replace("9\n", ""));
  review.accept(proposal.proposed, review.lenses(proposal.proposed, twoLanded!)[0]!.key);
  assert.deepEqual(review.lenses(proposal.proposed, twoLanded!).map((l) => [l.line, l.index, l.count]), [[8, 1, 1]]);
  assert.equal(review.reject(proposal.proposed, twoLanded!, "no such hunk"), undefined);
  // CRLF documents keep their line breaks; a read-only proposal has no lenses
  const crlf = THREE.replace(/\n/g, "\r\n");
  const fresh = new HunkReview(store);
  const back = fresh.reject(proposal.proposed, crlf, fresh.lenses(proposal.proposed, crlf)[0]!.key);
  assert.equal(back, crlf.replace("two", "2"));
  const plainStore = new DiffStore(uris, () => false);
  const plain = plainStore.prepare("/w/a.txt", TEN, THREE);
  assert.deepEqual(new HunkReview(plainStore).lenses(plain.proposed, THREE), []);
});

test("per-hunk review: rejecting the only hunk of a new file empties it", () => {
  const store = new DiffStore(uris, () => true);
  const proposal = store.prepare("/w/new.txt", null, "x\n");
  const review = new HunkReview(store);
  const [only] = review.lenses(proposal.proposed, "x\n");
  assert.equal(review.reject(proposal.proposed, "x\n", only!.key), "");
});
