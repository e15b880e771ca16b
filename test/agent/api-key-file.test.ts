/** The agent's key file: read at start (refused naming the flag), re-read when a Secret mount rotates it, last good key kept. */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { fileApiKey } from '../../src/agent/api-key-file.js';
import { ConfigError } from '../../src/config.js';
import type { Clock } from '../../src/runtime/timers.js';

const log = pino({ level: 'silent' });
const KEY1 = 'agent-key-one-0123456789';
const KEY2 = 'agent-key-two-9876543210';

function clock(): Clock & { advance(ms: number): void } {
  let now = 1_000_000;
  return { now: () => now, setTimeout: () => 0, clearTimeout: () => {}, advance: (ms) => (now += ms) };
}

/** A Secret volume: `key` → `..data/key`, `..data` → a timestamped directory swapped atomically on rotation. */
function secretMount(key: string): { path: string; rotate(next: string): void } {
  const dir = mkdtempSync(join(tmpdir(), 'cmn-keyfile-'));
  let n = 0;
  const write = (k: string): void => {
    const ts = join(dir, `..ts${n++}`);
    mkdirSync(ts);
    writeFileSync(join(ts, 'api-key'), k + '\n');
    symlinkSync(ts, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  write(key);
  symlinkSync(join('..data', 'api-key'), join(dir, 'api-key'));
  return { path: join(dir, 'api-key'), rotate: write };
}

describe('fileApiKey', () => {
  it('reads the key (trimmed); a rotated Secret mount is picked up on the next check; never sooner than 1 s', () => {
    const m = secretMount(KEY1);
    const c = clock();
    const get = fileApiKey(m.path, log, c);
    expect(get()).toBe(KEY1);
    m.rotate(KEY2);
    expect(get()).toBe(KEY1); // checked at most once a second
    c.advance(1_000);
    expect(get()).toBe(KEY2);
  });

  it('a file that disappears or goes bad keeps the last good key; a good one later is taken', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cmn-keyfile-'));
    const path = join(dir, 'k');
    writeFileSync(path, KEY1);
    const c = clock();
    const get = fileApiKey(path, log, c);
    rmSync(path);
    c.advance(1_000);
    expect(get()).toBe(KEY1);
    writeFileSync(path, 'short');
    c.advance(1_000);
    expect(get()).toBe(KEY1);
    writeFileSync(path, `${KEY2}\n`);
    c.advance(1_000);
    expect(get()).toBe(KEY2);
  });

  it.each([
    ['missing', undefined, 'no such file'],
    ['too short', 'abc', 'at least 16 characters'],
    ['two words', `${KEY1} ${KEY2}`, 'one key'],
  ])('at start, a %s file is a ConfigError naming --api-key-file, never the content', (_n, content, message) => {
    const dir = mkdtempSync(join(tmpdir(), 'cmn-keyfile-'));
    const path = join(dir, 'k');
    if (content !== undefined) writeFileSync(path, content);
    let err: unknown;
    try {
      fileApiKey(path, log, clock());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(`--api-key-file ${path}`);
    expect((err as Error).message).toContain(message);
    if (content) expect((err as Error).message).not.toContain(content);
  });
});
