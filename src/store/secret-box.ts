/**
 * Integration secrets at rest: AES-256-GCM (node:crypto) with a random 96-bit nonce per write, in a
 * versioned envelope that names the key that sealed it:
 *
 *   enc:v1:<keyId>:<base64url(nonce(12) ‖ ciphertext ‖ tag(16))>
 *
 * The additional authenticated data binds the envelope to its row (table.column, company id, record
 * id) and to its header, so a ciphertext copied into another tenant's row, or relabelled with another
 * key id, fails authentication instead of decrypting.
 *
 * Keys come from a key file (--secret-key-file), one `<keyId>:<base64 of 32 bytes>` per line; `#`
 * comments and blank lines are ignored. The FIRST key encrypts; every key decrypts (rotation).
 * A value that does not start with `enc:` is a row written before encryption existed (plaintext JSON):
 * it is still read, and re-encrypted by the next write or the start-up pass (see reencryptSecrets).
 *
 * Errors never contain key material or the plaintext; they name the key ids and the row.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const ENVELOPE_PREFIX = 'enc:';
const VERSION = 'v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const KEY_ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/** The stored secrets cannot be read with the configured keys (unknown key id, wrong key, damaged row). */
export class SecretKeyError extends Error {
  override name = 'SecretKeyError';
}

export interface SecretKey {
  id: string;
  key: Buffer;
}

/** Where a sealed value lives: part of the authenticated data, so it cannot be moved to another row. */
export interface SecretSlot {
  /** e.g. "integrations.secrets" */
  column: string;
  companyId: string;
  id: string;
}

function aad(header: string, slot: SecretSlot): Buffer {
  return Buffer.from(`certmgr-notify\u0000${header}\u0000${slot.column}\u0000${slot.companyId}\u0000${slot.id}`, 'utf8');
}

export class SecretBox {
  readonly #keys: ReadonlyMap<string, Buffer>;
  readonly primary: string;

  constructor(keys: readonly SecretKey[]) {
    if (keys.length === 0) throw new SecretKeyError('secret key ring is empty: at least one key is needed');
    const m = new Map<string, Buffer>();
    for (const k of keys) {
      if (!KEY_ID_RE.test(k.id)) throw new SecretKeyError(`secret key id "${k.id}" is invalid: use 1-64 of A-Z a-z 0-9 _ . -`);
      if (k.key.length !== KEY_BYTES) throw new SecretKeyError(`secret key "${k.id}" must be ${KEY_BYTES} bytes, got ${k.key.length}`);
      if (m.has(k.id)) throw new SecretKeyError(`secret key id "${k.id}" appears twice`);
      m.set(k.id, Buffer.from(k.key));
    }
    this.#keys = m;
    this.primary = keys[0]!.id;
  }

  get keyIds(): string[] {
    return [...this.#keys.keys()];
  }

  /** A box with one fresh random key (in-memory stores: the data dies with the process anyway). */
  static ephemeral(): SecretBox {
    return new SecretBox([{ id: 'ephemeral', key: randomBytes(KEY_BYTES) }]);
  }

  seal(plaintext: string, slot: SecretSlot): string {
    const header = `${ENVELOPE_PREFIX}${VERSION}:${this.primary}:`;
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#keys.get(this.primary)!, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(header, slot));
    const body = Buffer.concat([nonce, cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return header + body.toString('base64url');
  }

  /** The plaintext of a sealed value. Throws SecretKeyError naming the row and key id when it cannot. */
  open(sealed: string, slot: SecretSlot): string {
    const where = `${slot.column} of ${slot.id}`;
    const m = /^enc:([^:]+):([^:]+):([A-Za-z0-9_-]*)$/.exec(sealed);
    if (!m) throw new SecretKeyError(`${where}: not a secret envelope (damaged row?)`);
    const [, version, keyId, b64] = m as unknown as [string, string, string, string];
    if (version !== VERSION)
      throw new SecretKeyError(`${where}: envelope version "${version}" is not supported (this build reads ${VERSION})`);
    const key = this.#keys.get(keyId);
    if (!key)
      throw new SecretKeyError(
        `${where}: sealed with secret key "${keyId}", which is not in the key file (it has: ${this.keyIds.join(', ')}); add that key back to the file`,
      );
    const body = Buffer.from(b64, 'base64url');
    if (body.length < NONCE_BYTES + TAG_BYTES) throw new SecretKeyError(`${where}: envelope too short (damaged row?)`);
    const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(aad(`${ENVELOPE_PREFIX}${version}:${keyId}:`, slot));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(body.subarray(NONCE_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretKeyError(
        `${where}: secret key "${keyId}" does not decrypt it (authentication failed): the key file holds a different key under that id, or the row was altered`,
      );
    }
  }

  /** Whether a stored value is already sealed with the primary key (nothing for a re-encryption pass to do). */
  isCurrent(stored: string): boolean {
    return stored.startsWith(`${ENVELOPE_PREFIX}${VERSION}:${this.primary}:`);
  }
}

export function isSealed(stored: string): boolean {
  return stored.startsWith(ENVELOPE_PREFIX);
}

/** Parses a key file's text (`<keyId>:<base64 32 bytes>` per line). `source` names it in errors; keys never appear in them. */
export function parseKeyFile(text: string, source: string): SecretKey[] {
  const keys: SecretKey[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const at = `${source} line ${i + 1}`;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new SecretKeyError(`${at}: expected <keyId>:<base64 of 32 random bytes>`);
    const id = line.slice(0, colon);
    const b64 = line.slice(colon + 1).trim();
    if (!KEY_ID_RE.test(id)) throw new SecretKeyError(`${at}: key id "${id.slice(0, 64)}" is invalid: use 1-64 of A-Z a-z 0-9 _ . -`);
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(b64)) throw new SecretKeyError(`${at}: key "${id}" is not base64`);
    const key = Buffer.from(b64, b64.includes('-') || b64.includes('_') ? 'base64url' : 'base64');
    if (key.length !== KEY_BYTES)
      throw new SecretKeyError(
        `${at}: key "${id}" must decode to ${KEY_BYTES} bytes, got ${key.length} (generate one with: openssl rand -base64 32)`,
      );
    if (keys.some((k) => k.id === id)) throw new SecretKeyError(`${at}: key id "${id}" appears twice`);
    keys.push({ id, key });
  });
  if (keys.length === 0)
    throw new SecretKeyError(`${source}: no keys (expected lines <keyId>:<base64 of 32 random bytes>; the first one encrypts)`);
  return keys;
}

function loadKeyFile(path: string): SecretBox {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new SecretKeyError(`secret key file ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return new SecretBox(parseKeyFile(text, `secret key file ${path}`));
}

/** A new key line: id from the date (sorts, tells the age), 32 random bytes. */
function newKeyLine(now = new Date()): string {
  const id = 'k' + now.toISOString().slice(0, 19).replace(/[-:T]/g, '');
  return `${id}:${randomBytes(KEY_BYTES).toString('base64')}`;
}

/**
 * Reuses or creates (mode 0600, parent 0700 when created) the key file of an embedded store.
 * Returns whether it was created. O_EXCL: two processes starting at once never write two different keys.
 */
export function ensureKeyFile(path: string): { box: SecretBox; created: boolean } {
  if (!existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    try {
      const fd = openSync(path, 'wx', 0o600);
      try {
        writeSync(fd, `# certmgr-notify secret keys: <keyId>:<base64 32 bytes>; the first encrypts, all decrypt\n${newKeyLine()}\n`);
      } finally {
        closeSync(fd);
      }
      chmodSync(path, 0o600); // the umask may have narrowed it further, never widened; make it exact
      return { box: loadKeyFile(path), created: true };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  return { box: loadKeyFile(path), created: false };
}

/**
 * Where the key ring comes from, decided from the store URL and --secret-key-file:
 * - a key file given: it must exist (a mounted Secret; never generated there);
 * - an embedded SQLite file store without one: generated once as `secret-key` next to the database
 *   (0600), like the generated API key. It protects copies of the database file that leave the volume
 *   (backups, support bundles), not someone who can read the whole volume;
 * - sqlite::memory:: a random key that lives as long as the data;
 * - PostgreSQL without one: refused by the configuration (every replica must share the key).
 */
export type SecretKeySource = { kind: 'file'; path: string } | { kind: 'generate'; path: string } | { kind: 'ephemeral' };

export function secretKeySource(storeUrl: string, keyFile: string | undefined): SecretKeySource {
  if (keyFile !== undefined) return { kind: 'file', path: keyFile };
  if (storeUrl === 'sqlite::memory:') return { kind: 'ephemeral' };
  if (storeUrl.startsWith('sqlite:'))
    return { kind: 'generate', path: join(dirname(resolve(storeUrl.slice('sqlite:'.length))), 'secret-key') };
  if (/^postgres(ql)?:\/\//.test(storeUrl)) throw new SecretKeyError('a PostgreSQL store needs a secret key file (--secret-key-file)');
  return { kind: 'ephemeral' }; // any other URL is refused by openStore, with the forms it accepts
}

export function openSecretBox(source: SecretKeySource): { box: SecretBox; created: boolean } {
  switch (source.kind) {
    case 'file':
      return { box: loadKeyFile(source.path), created: false };
    case 'generate':
      return ensureKeyFile(source.path);
    case 'ephemeral':
      return { box: SecretBox.ephemeral(), created: false };
  }
}
