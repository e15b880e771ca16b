/**
 * The delivery worker's writes commit at synchronous=NORMAL on SQLite (docs/reliability.md, "Durability of the
 * worker's writes"): no fsync, yet a process crash loses none of them. A real process claims and records an
 * outcome through the worker's path (recordOutcomes: grouped, NORMAL) and is SIGKILLed at once, before anything
 * else commits (no FULL commit, no close, no checkpoint syncs the log after it). A new process then finds the
 * outcome, and the key's next delivery is due and claimable.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { eventRecord, newDelivery } from './contract.js';

const dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-sqlite-kill-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const storeModule = pathToFileURL(join(import.meta.dirname, '../../src/store/index.ts')).href;

/** Runs `code` (ESM, top-level await) in a new node process with tsx; resolves with its exit signal and stdout. */
function child(code: string, env: Record<string, string>): Promise<{ signal: NodeJS.Signals | null; out: string }> {
  const proc = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '--import', 'tsx', '--input-type=module', '-e', code], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve) => proc.on('exit', (_code, signal) => resolve({ signal, out })));
}

describe('SQLite: the worker writes committed at NORMAL survive kill -9', () => {
  it('a grouped outcome recorded just before SIGKILL is there after the restart; the next of its key is claimable', async () => {
    const file = join(dir, `kill-${randomUUID()}.db`);
    const setup = await openStore(`sqlite:${file}`);
    await setup.migrate();
    const A = randomUUID();
    const integrationId = randomUUID();
    const t = Date.now();
    const [e1, e2] = [eventRecord(A, { receivedAt: t }), eventRecord(A, { receivedAt: t })];
    const d1 = newDelivery(e1, { integrationId, orderKey: 'issuer/a', orderAt: t, orderSeq: 1 });
    const d2 = newDelivery(e2, { integrationId, orderKey: 'issuer/a', orderAt: t, orderSeq: 2 });
    await setup.transaction(async (tx) => {
      await tx.insertEvents([e1, e2]);
      await tx.insertDeliveries([d1, d2]);
    });
    await setup.close();

    // the child: claim (NORMAL), record the outcome (NORMAL), then die without any later commit
    const run = await child(
      `const { openStore } = await import(${JSON.stringify(storeModule)});
       const store = await openStore('sqlite:' + process.env.STORE_FILE);
       const now = Number(process.env.NOW);
       const [d] = await store.claimDeliveries(now, 10, 60_000, 'pod-a');
       const [ok] = await store.recordOutcomes([{ id: d.id, attemptNo: d.attempts, kind: 'delivered', statusCode: 200 }], now);
       process.stdout.write(JSON.stringify({ id: d.id, ok }) + '\\n');
       process.kill(process.pid, 'SIGKILL');`,
      { STORE_FILE: file, NOW: String(t + 1000) },
    );
    expect(run.signal).toBe('SIGKILL');
    expect(JSON.parse(run.out.trim())).toEqual({ id: d1.id, ok: true });

    const after = await openStore(`sqlite:${file}`);
    const rows = await after.listDeliveries(A, {});
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(d1.id)).toMatchObject({ status: 'DELIVERED', attempts: 1, lastStatusCode: 200 });
    expect(byId.get(d2.id)).toMatchObject({ status: 'PENDING', attempts: 0 });
    // the head left the queue, so the key's next delivery goes (claimed at FULL: its key has an older delivery)
    const next = await after.claimDeliveries(t + 2000, 10, 60_000, 'pod-a');
    expect(next.map((d) => d.id)).toEqual([d2.id]);
    await after.close();
  });
});
