/** `serve --log-format pretty` as a real process (the built bundle, as the image runs it): readable lines, no JSON. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { serviceBinary } from '../support/binary.js';

const dir = mkdtempSync(join(tmpdir(), 'cmn-log-format-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('serve --log-format pretty writes pino-pretty lines (level, name, message)', async () => {
  const p = spawn(
    process.execPath,
    [serviceBinary(), 'serve', '--port', '0', '--host', '127.0.0.1', '--kube', 'off', '--log-format', 'pretty'],
    {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  p.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<number>((resolve) => p.on('exit', (c) => resolve(c ?? -1)));
  try {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no listening line: ${out}`)), 60_000);
      p.stdout.on('data', () => {
        if (/INFO \(certmgr-notify\): listening/.test(out)) {
          clearTimeout(t);
          resolve();
        }
      });
      p.on('exit', () => reject(new Error(`exited: ${out}`)));
    });
    expect(out).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [+-]\d{4}\] INFO \(certmgr-notify\): /m);
    expect(out.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);
  } finally {
    p.kill('SIGKILL');
    await exited;
  }
});
