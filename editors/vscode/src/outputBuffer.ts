// A terminal's captured output, kept under a byte limit by dropping from the start
// (never splitting a UTF-8 character), as terminal/output's outputByteLimit asks.

export class OutputBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropped = false;

  constructor(private readonly limit: number | null | undefined) {}

  push(data: Buffer): void {
    this.chunks.push(data);
    this.size += data.length;
    if (this.limit != null && this.size > this.limit) this.trim(this.limit);
  }

  private trim(limit: number): void {
    let all = Buffer.concat(this.chunks);
    let start = all.length - limit;
    // Move forward past UTF-8 continuation bytes (10xxxxxx) so a character stays whole.
    while (start < all.length && ((all[start] ?? 0) & 0xc0) === 0x80) start += 1;
    all = all.subarray(start);
    this.chunks = [all];
    this.size = all.length;
    this.dropped = true;
  }

  get truncated(): boolean {
    return this.dropped;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}
