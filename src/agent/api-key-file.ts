/**
 * The agent's hub API key from a file (`--api-key-file`), re-read when the file changes: a mounted Secret is
 * rotated by swapping a symlink, so the file is stat'ed (at most once a second) and read again when its
 * identity, size or mtime moved. A re-read that fails or finds no key keeps the last good key (warned once).
 * The key is never logged.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Logger } from 'pino';
import { ConfigError } from '../config.js';
import { realClock, type Clock } from '../runtime/timers.js';

const MIN_KEY_LENGTH = 16;

function readKey(path: string): string {
  const key = readFileSync(path, 'utf8').trim();
  if (key.length < MIN_KEY_LENGTH) throw new Error(`holds no key of at least ${MIN_KEY_LENGTH} characters`);
  if (/\s/.test(key)) throw new Error('holds more than one word (one key, nothing else)');
  return key;
}

function fingerprint(path: string): string {
  const s = statSync(path);
  return `${s.ino}:${s.size}:${s.mtimeMs}`;
}

/** A getter of the current key; throws ConfigError when the file cannot be read at start. */
export function fileApiKey(path: string, log: Logger, clock: Clock = realClock): () => string {
  let key: string;
  let seen: string;
  try {
    seen = fingerprint(path);
    key = readKey(path);
  } catch (e) {
    throw new ConfigError(
      `--api-key-file ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`,
    );
  }
  let checkedAt = clock.now();
  let warned = false;
  return () => {
    const now = clock.now();
    if (now - checkedAt < 1_000) return key;
    checkedAt = now;
    try {
      const f = fingerprint(path);
      if (f === seen) return key;
      const next = readKey(path);
      seen = f;
      if (next !== key) log.info({ path }, 'API key file changed; using the new key');
      key = next;
      warned = false;
    } catch (e) {
      if (!warned) log.warn({ path, error: (e as Error).message }, 'API key file cannot be read; keeping the last key');
      warned = true;
    }
    return key;
  };
}
