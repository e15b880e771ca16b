/**
 * A LIST response read as it arrives, pure: each item is cut out of the byte stream and handed on as soon as
 * its last byte is in, so a list of any length costs the memory of one item plus one network chunk, never the
 * whole body. The apiserver answers a LIST with `resourceVersion=0` from its watch cache in ONE response
 * whatever `limit` says (v1.20 and later without the WatchList feature): at scale, more than a string can hold.
 * See docs/performance.md "Scale".
 *
 * - JSON (`JsonListStream`): a byte scanner that tracks strings, escapes and nesting depth; the elements of the
 *   top-level `items` array are cut out as byte slices (UTF-8 multibyte sequences never contain the ASCII bytes
 *   it looks for, so a chunk boundary anywhere is harmless) and parsed one by one with JSON.parse; everything
 *   else (apiVersion, kind, metadata: the list's resourceVersion and continue token) is kept as the small
 *   envelope and parsed at the end.
 * - protobuf (`ProtoListStream`): the `k8s\0` magic, then a runtime.Unknown whose field 2 (`raw`) is the list
 *   message {1: ListMeta, 2: repeated item}; each item is a length-delimited field, handed on as its bytes.
 *
 * Hostile input ends in an Error naming what was wrong and where (byte offset): an item larger than
 * `maxItemBytes`, nesting deeper than `maxDepth`, an envelope larger than `maxEnvelopeBytes`, a truncated body.
 */

import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

export interface ListStreamLimits {
  /** largest item accepted, bytes (an etcd value is at most 1.5 MiB; its JSON a little more) */
  maxItemBytes?: number;
  /** deepest JSON nesting accepted (the list object is depth 1, an item depth 3) */
  maxDepth?: number;
  /** largest list envelope (everything but the items), bytes */
  maxEnvelopeBytes?: number;
}

export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
}

const DEFAULT_MAX_ITEM_BYTES = 8 * 1024 * 1024;
const DEFAULT_MAX_DEPTH = 100;
const DEFAULT_MAX_ENVELOPE_BYTES = 1024 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const ITEMS = Buffer.from('items');

const isSpace = (b: number): boolean => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** See the module comment. `onItem` receives each parsed item of `items`, in order. */
export class JsonListStream {
  private readonly maxItemBytes: number;
  private readonly maxDepth: number;
  private readonly maxEnvelopeBytes: number;
  private depth = 0;
  private inString = false;
  private escape = false;
  /** inside the top-level `items` array */
  private inItems = false;
  private itemsSeen = false;
  /** the last string at depth 1 (a key, when followed by ':'); only its first bytes, enough to tell `items` */
  private key: number[] = [];
  private keyTooLong = false;
  /** parts of the item being read that arrived in earlier chunks */
  private parts: Uint8Array[] = [];
  private partBytes = 0;
  private envelope: number[] = [];
  private offset = 0;
  private started = false;
  private count = 0;

  constructor(
    private readonly onItem: (item: unknown) => void,
    limits: ListStreamLimits = {},
  ) {
    this.maxItemBytes = limits.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES;
    this.maxDepth = limits.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.maxEnvelopeBytes = limits.maxEnvelopeBytes ?? DEFAULT_MAX_ENVELOPE_BYTES;
  }

  private fail(what: string, at: number): never {
    throw new Error(`JSON list: ${what} at byte ${at}`);
  }

  push(chunk: Uint8Array): void {
    let itemStart = this.inItems && this.depth >= 3 ? 0 : -1;
    const n = chunk.length;
    for (let i = 0; i < n; i++) {
      const b = chunk[i]!;
      if (this.inString) {
        if (this.escape) this.escape = false;
        else if (b === BACKSLASH) this.escape = true;
        else if (b === QUOTE) this.inString = false;
        else if (this.depth === 1) {
          if (this.key.length < ITEMS.length) this.key.push(b);
          else this.keyTooLong = true;
        }
        if (itemStart < 0) this.keep(b, i);
        continue;
      }
      if (!this.started) {
        if (isSpace(b)) continue;
        if (b !== OPEN_BRACE) this.fail('not a JSON object', this.offset + i);
        this.started = true;
      } else if (this.depth === 0 && !isSpace(b)) this.fail('data after the list', this.offset + i);
      if (b === QUOTE) {
        if (this.inItems && this.depth === 2) this.fail(`items[${this.count}] is not an object`, this.offset + i);
        this.inString = true;
        if (this.depth === 1) {
          this.key = [];
          this.keyTooLong = false;
        }
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        if (++this.depth > this.maxDepth) this.fail(`nesting deeper than ${this.maxDepth}`, this.offset + i);
        if (this.depth === 2 && b === OPEN_BRACKET && this.isItemsKey()) {
          if (this.itemsSeen) this.fail('a second "items"', this.offset + i);
          this.inItems = this.itemsSeen = true;
        } else if (this.inItems && this.depth === 3) {
          if (b !== OPEN_BRACE) this.fail(`items[${this.count}] is not an object`, this.offset + i);
          itemStart = i;
        }
      } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        if (this.depth === 0) this.fail('unbalanced close', this.offset + i);
        this.depth--;
        if (this.inItems && this.depth === 2) {
          this.item(chunk.subarray(itemStart, i + 1));
          itemStart = -1;
          continue; // the item's bytes are not part of the envelope
        }
        if (this.inItems && this.depth === 1) this.inItems = false;
      } else if (this.inItems && this.depth === 2 && !isSpace(b)) {
        if (b === COMMA) continue;
        this.fail(`items[${this.count}] is not an object`, this.offset + i);
      }
      if (itemStart < 0) this.keep(b, i);
    }
    if (itemStart >= 0) {
      const rest = chunk.subarray(itemStart);
      this.partBytes += rest.length;
      if (this.partBytes > this.maxItemBytes) this.fail(`items[${this.count}] larger than ${this.maxItemBytes} bytes`, this.offset + n);
      // a copy: the caller may reuse its chunk
      this.parts.push(Uint8Array.prototype.slice.call(rest));
    }
    this.offset += n;
  }

  /** The list's envelope once the body ended: its metadata (resourceVersion, continue); throws when it is incomplete. */
  end(): { apiVersion?: string | undefined; kind?: string | undefined; metadata: ListMeta } {
    if (!this.started) this.fail('empty body', this.offset);
    if (this.depth !== 0 || this.inString) this.fail('unterminated list', this.offset);
    const env = JSON.parse(Buffer.from(this.envelope).toString('utf8')) as { apiVersion?: string; kind?: string; metadata?: ListMeta };
    const md = env.metadata ?? {};
    // the list's metadata becomes client-node's V1ListMeta, which takes a key only with a value
    const metadata: ListMeta = {};
    if (typeof md.resourceVersion === 'string') metadata.resourceVersion = md.resourceVersion;
    if (typeof md.continue === 'string' && md.continue !== '') metadata.continue = md.continue;
    return {
      apiVersion: typeof env.apiVersion === 'string' ? env.apiVersion : undefined,
      kind: typeof env.kind === 'string' ? env.kind : undefined,
      metadata,
    };
  }

  private isItemsKey(): boolean {
    return !this.keyTooLong && this.key.length === ITEMS.length && this.key.every((c, j) => c === ITEMS[j]);
  }

  private keep(b: number, i: number): void {
    if (this.envelope.length >= this.maxEnvelopeBytes)
      this.fail(`list envelope larger than ${this.maxEnvelopeBytes} bytes`, this.offset + i);
    this.envelope.push(b);
  }

  private item(last: Uint8Array): void {
    const size = this.partBytes + last.length;
    if (size > this.maxItemBytes) this.fail(`items[${this.count}] larger than ${this.maxItemBytes} bytes`, this.offset);
    const bytes = this.parts.length === 0 ? last : Buffer.concat([...this.parts, last], size);
    this.parts = [];
    this.partBytes = 0;
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    let obj: unknown;
    try {
      obj = JSON.parse(text);
    } catch (e) {
      throw new Error(`JSON list: items[${this.count}]: ${(e as Error).message}`, { cause: e });
    }
    this.count++;
    this.onItem(obj);
  }
}

const MAGIC = [0x6b, 0x38, 0x73, 0x00];

/** See the module comment. `onItem` receives the bytes of each item (valid only during the call). */
export class ProtoListStream {
  private readonly maxItemBytes: number;
  private readonly maxEnvelopeBytes: number;
  private chunks: Buffer[] = [];
  private avail = 0;
  /** bytes consumed so far (for error offsets) */
  private consumed = 0;
  /** bytes of a field being stepped over that have not arrived yet */
  private skipping = 0;
  /** bytes left of the `raw` list message; -1 outside it */
  private rawLeft = -1;
  private rawSeen = false;
  private magicDone = false;
  private meta: ListMeta = {};
  private count = 0;

  constructor(
    private readonly onItem: (item: Buffer) => void,
    limits: ListStreamLimits = {},
  ) {
    this.maxItemBytes = limits.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES;
    this.maxEnvelopeBytes = limits.maxEnvelopeBytes ?? DEFAULT_MAX_ENVELOPE_BYTES;
  }

  private fail(what: string): never {
    throw new Error(`protobuf list: ${what} at byte ${this.consumed}`);
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    // a copy: the caller may reuse its chunk, and items are cut out of these
    const copy = Buffer.from(chunk);
    if (this.skipping > 0) {
      const s = Math.min(this.skipping, copy.length);
      this.skipping -= s;
      this.consumed += s;
      if (this.rawLeft >= 0) this.rawLeft -= s;
      this.leaveRaw();
      if (s === copy.length) return;
      this.chunks.push(copy.subarray(s));
      this.avail += copy.length - s;
    } else {
      this.chunks.push(copy);
      this.avail += copy.length;
    }
    this.drain();
  }

  /** The list's metadata once the body ended; throws when the body was incomplete. */
  end(): { metadata: ListMeta } {
    if (!this.magicDone || this.avail > 0 || this.skipping > 0 || this.rawLeft >= 0) this.fail('truncated list');
    if (!this.rawSeen) this.fail('response without a list');
    return { metadata: this.meta };
  }

  private drain(): void {
    if (!this.magicDone) {
      if (this.avail < 4) return;
      const head = this.take(4);
      if (!MAGIC.every((b, i) => head[i] === b)) this.fail('not a Kubernetes protobuf response');
      this.magicDone = true;
    }
    for (;;) {
      const tag = this.varint(0);
      if (!tag) return;
      const [t, tagLen] = tag;
      const field = Math.floor(t / 8);
      const wire = t % 8;
      if (wire === WireType.LengthDelimited) {
        const len = this.varint(tagLen);
        if (!len) return;
        const [n, lenLen] = len;
        const inRaw = this.rawLeft >= 0;
        if (inRaw && tagLen + lenLen + n > this.rawLeft) this.fail('field beyond its message');
        if (!inRaw && field === 2) {
          if (this.rawSeen) this.fail('a second list');
          this.consume(tagLen + lenLen);
          this.rawSeen = true;
          this.rawLeft = n;
          this.leaveRaw();
          continue;
        }
        const isItem = inRaw && field === 2;
        const isMeta = inRaw && field === 1;
        if (isItem && n > this.maxItemBytes) this.fail(`item ${this.count} larger than ${this.maxItemBytes} bytes`);
        if (isMeta && n > this.maxEnvelopeBytes) this.fail(`list metadata larger than ${this.maxEnvelopeBytes} bytes`);
        if (!isItem && !isMeta) {
          this.consume(tagLen + lenLen);
          this.skip(n);
          continue;
        }
        if (this.avail < tagLen + lenLen + n) return;
        this.consume(tagLen + lenLen);
        const bytes = this.take(n);
        if (isItem) {
          this.count++;
          this.onItem(bytes);
        } else this.readMeta(bytes);
        this.leaveRaw();
      } else if (wire === WireType.Varint) {
        const v = this.varint(tagLen);
        if (!v) return;
        this.within(tagLen + v[1]);
        this.consume(tagLen + v[1]);
        this.leaveRaw();
      } else if (wire === WireType.Bit64 || wire === WireType.Bit32) {
        const size = wire === WireType.Bit64 ? 8 : 4;
        this.within(tagLen + size);
        this.consume(tagLen);
        this.skip(size);
      } else this.fail(`unsupported wire type ${wire}`);
    }
  }

  private readMeta(bytes: Buffer): void {
    try {
      const r = new BinaryReader(bytes);
      while (r.pos < bytes.length) {
        const [f, w] = r.tag();
        if (w === WireType.LengthDelimited && f === 2) this.meta.resourceVersion = r.string();
        else if (w === WireType.LengthDelimited && f === 3) {
          const c = r.string();
          if (c !== '') this.meta.continue = c;
        } else r.skip(w);
      }
    } catch (e) {
      this.fail(`unreadable list metadata (${(e as Error).message})`);
    }
  }

  /** Steps over `n` bytes, those not yet arrived included. */
  private skip(n: number): void {
    const now = Math.min(n, this.avail);
    this.consume(now);
    this.skipping = n - now;
    if (this.skipping === 0) this.leaveRaw();
  }

  /** Inside the list message, a field of `n` bytes must end within it (before it is consumed). */
  private within(n: number): void {
    if (this.rawLeft >= 0 && n > this.rawLeft) this.fail('field beyond its message');
  }

  private leaveRaw(): void {
    if (this.rawLeft === 0) this.rawLeft = -1;
    else if (this.rawLeft < -1) this.fail('field beyond its message');
  }

  /** The varint at `at` bytes past the read position: [value, its length], undefined while incomplete. */
  private varint(at: number): [number, number] | undefined {
    let value = 0;
    let mul = 1;
    let ci = 0;
    let pos = at;
    // find the chunk holding byte `at`
    while (ci < this.chunks.length && pos >= this.chunks[ci]!.length) pos -= this.chunks[ci++]!.length;
    for (let len = 1; len <= 10; len++) {
      const c = this.chunks[ci];
      if (!c) return undefined;
      const b = c[pos]!;
      value += (b & 0x7f) * mul;
      mul *= 128;
      if ((b & 0x80) === 0) return [value, len];
      if (++pos >= c.length) {
        ci++;
        pos = 0;
      }
    }
    return this.fail('varint too long');
  }

  private consume(n: number): void {
    this.take(n);
  }

  /** The next `n` available bytes (a subarray when they lie in one chunk). */
  private take(n: number): Buffer {
    this.avail -= n;
    this.consumed += n;
    if (this.rawLeft >= 0) this.rawLeft -= n;
    const first = this.chunks[0];
    if (first && first.length >= n) {
      const out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let got = 0;
    while (got < n) {
      const c = this.chunks[0]!;
      const k = Math.min(c.length, n - got);
      c.copy(out, got, 0, k);
      got += k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
    return out;
  }
}
