/**
 * The archive's container: a POSIX tar (ustar) stream, so `tar -tzvf outpost-….tar.gz` lists it with
 * nothing of Outpost's. Only what backups need: regular files, names under 100 bytes, no links.
 * Entries are written whole (their size goes in the header before the data), which is why the
 * database dump is cut into parts of bounded size (./dump.ts).
 */

const BLOCK = 512;
const ZERO_BLOCK = new Uint8Array(BLOCK);

export class ArchiveFormatError extends Error {
  override name = "ArchiveFormatError";
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

/** One ustar header: name, mode 0600, owner 0, size, mtime, regular file. */
export function tarHeader(name: string, size: number, mtime: Date): Uint8Array {
  const nameBytes = new TextEncoder().encode(name);
  if (nameBytes.length > 99) throw new Error(`archive entry name too long: ${name}`);
  const header = new Uint8Array(BLOCK);
  const put = (offset: number, text: string) => header.set(new TextEncoder().encode(text), offset);
  header.set(nameBytes, 0);
  put(100, octal(0o600, 8));
  put(108, octal(0, 8));
  put(116, octal(0, 8));
  put(124, octal(size, 12));
  put(136, octal(Math.floor(mtime.getTime() / 1000), 12));
  put(148, "        "); // the checksum counts its own field as spaces
  put(156, "0");
  put(257, "ustar\0");
  put(263, "00");
  let sum = 0;
  for (const byte of header) sum += byte;
  put(148, `${sum.toString(8).padStart(6, "0")}\0 `);
  return header;
}

/** Zero bytes that pad an entry of `size` bytes to a whole block. */
export function tarPadding(size: number): Uint8Array {
  return ZERO_BLOCK.subarray(0, (BLOCK - (size % BLOCK)) % BLOCK);
}

/** The end of an archive: two zero blocks. */
export const TAR_END = new Uint8Array(BLOCK * 2);

/** Reads exact byte counts from a stream of chunks, holding at most one chunk. */
class ByteReader {
  private buffered: Uint8Array = new Uint8Array(0);
  constructor(private readonly source: AsyncIterator<Uint8Array>) {}

  /** Up to `max` bytes: fewer only where a chunk ends, none at the end of the stream. */
  async next(max: number): Promise<Uint8Array> {
    while (this.buffered.length === 0) {
      const { value, done } = await this.source.next();
      if (done) return new Uint8Array(0);
      this.buffered = value;
    }
    const piece = this.buffered.subarray(0, max);
    this.buffered = this.buffered.subarray(piece.length);
    return piece;
  }

  async exactly(count: number, what: string): Promise<Uint8Array> {
    const out = new Uint8Array(count);
    let filled = 0;
    while (filled < count) {
      const piece = await this.next(count - filled);
      if (piece.length === 0) throw new ArchiveFormatError(`the archive is truncated (${what})`);
      out.set(piece, filled);
      filled += piece.length;
    }
    return out;
  }
}

export interface TarEntry {
  name: string;
  size: number;
  /** The entry's bytes, once; whatever is left unread is skipped when the next entry is asked for. */
  body(): AsyncGenerator<Uint8Array>;
}

function readOctal(field: Uint8Array): number {
  const text = new TextDecoder().decode(field).replace(/\0.*$/s, "").trim();
  if (!/^[0-7]+$/.test(text)) throw new ArchiveFormatError("not an Outpost backup (bad tar header)");
  return Number.parseInt(text, 8);
}

/** The entries of a tar stream, in order. A header with a wrong checksum is an error, not the end. */
export async function* readTar(source: AsyncIterable<Uint8Array>): AsyncGenerator<TarEntry> {
  const reader = new ByteReader(source[Symbol.asyncIterator]());
  for (;;) {
    const header = await reader.exactly(BLOCK, "no end marker");
    if (header.every((byte) => byte === 0)) return;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : header[i]!;
    if (readOctal(header.subarray(148, 156)) !== sum)
      throw new ArchiveFormatError("not an Outpost backup, or a damaged one (tar header checksum)");
    const name = new TextDecoder().decode(header.subarray(0, 100)).replace(/\0.*$/s, "");
    const size = readOctal(header.subarray(124, 136));
    let left = size;
    let padded = false;
    const body = async function* () {
      while (left > 0) {
        const piece = await reader.next(Math.min(left, 1 << 20));
        if (piece.length === 0) throw new ArchiveFormatError(`the archive is truncated (inside ${name})`);
        left -= piece.length;
        yield piece;
      }
      if (!padded) await reader.exactly(tarPadding(size).length, `after ${name}`);
      padded = true;
    };
    yield { name, size, body };
    if (!padded) for await (const _ of body()) void _;
  }
}
