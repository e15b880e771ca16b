import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreError, openStore } from '../../src/store/index.js';
import { testDatabaseUrl } from '../support/postgres.js';

const dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-open-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('openStore', () => {
  it('sqlite::memory:', async () => {
    const s = await openStore('sqlite::memory:');
    expect(s.dialect).toBe('sqlite');
    await s.migrate();
    await s.ping();
    await s.close();
  });

  it('sqlite:<path> (relative to the working directory or absolute)', async () => {
    const path = join(dir, 'a', 'b.db');
    const s = await openStore(`sqlite:${path}`);
    expect(s.dialect).toBe('sqlite');
    expect(existsSync(path)).toBe(true);
    await s.close();
  });

  it('postgres:// and postgresql://', async () => {
    const url = testDatabaseUrl();
    for (const u of [url, url.replace(/^postgres(ql)?:/, 'postgresql:')]) {
      const s = await openStore(u);
      expect(s.dialect).toBe('postgres');
      await s.ping();
      await s.close();
    }
  });

  it('rejects anything else, naming the accepted forms and not echoing credentials', async () => {
    for (const bad of ['mysql://root:hunter2@db/app', 'sqlite:', 'notify.db', 'file:x.db', '']) {
      const err = await openStore(bad).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreError);
      expect(String(err)).toContain('sqlite:<path>, sqlite::memory:, postgres://… or postgresql://…');
      expect(String(err)).not.toContain('hunter2');
    }
  });
});
