/**
 * Secrets at rest: cost of one seal/open, and of the start-up re-encryption pass (plaintext → sealed, then a
 * rotation old key → new key, then the no-op check of already-current rows) over N integrations, on SQLite
 * (file) and, when DATABASE_URL is set, PostgreSQL. Also the log limiter's cost per admitted/dropped line.
 *
 *   BENCH_INTEGRATIONS=10000 node --import tsx bench/secrets.ts
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { LogLimiter } from '../src/log/limiter.js';
import { openStore } from '../src/store/index.js';
import { SecretBox } from '../src/store/secret-box.js';
import type { Store } from '../src/store/types.js';

const N = Number(process.env['BENCH_INTEGRATIONS'] ?? 10_000);

function time<T>(f: () => T): [T, number] {
  const t = performance.now();
  const r = f();
  return [r, performance.now() - t];
}

async function timeAsync<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now();
  const r = await f();
  return [r, performance.now() - t];
}

async function pass(name: string, open: (box?: SecretBox) => Promise<Store>): Promise<void> {
  // the same "old" key in both rings: the second ring rotates to "new"
  const oldKey = randomBytes(32);
  const ringOld = new SecretBox([{ id: 'old', key: oldKey }]);
  const ringNew = new SecretBox([
    { id: 'new', key: randomBytes(32) },
    { id: 'old', key: oldKey },
  ]);
  const plain = await open();
  const company = randomUUID();
  const now = Date.now();
  await plain.transaction(async (tx) => {
    for (let i = 0; i < N; i++)
      await tx.createIntegration({
        id: randomUUID(),
        companyId: company,
        name: `i${i}`,
        type: 'WEBHOOK',
        enabled: true,
        config: { signed: true },
        secrets: {
          url: `https://hooks.example.com/${randomBytes(16).toString('hex')}`,
          signingSecret: 'whsec_' + randomBytes(24).toString('base64'),
        },
        managedBy: null,
        createdAt: now,
        updatedAt: now,
      });
  });
  await plain.close();
  for (const [what, ring] of [
    ['plaintext → sealed', ringOld],
    ['rotation old → new', ringNew],
    ['check only (all current)', ringNew],
  ] as const) {
    const s = await open(ring);
    const [r, ms] = await timeAsync(() => s.reencryptSecrets());
    console.log(
      `${name.padEnd(10)} ${what.padEnd(26)} ${N} rows: ${ms.toFixed(0)} ms (${((ms * 1000) / N).toFixed(0)} µs/row), re-sealed ${r.reencrypted}, failed ${r.failed}`,
    );
    await s.close();
  }
}

export async function run(): Promise<void> {
  const box = new SecretBox([{ id: 'k1', key: randomBytes(32) }]);
  const slot = { column: 'integrations.secrets', companyId: randomUUID(), id: randomUUID() };
  const json = JSON.stringify({
    url: 'https://hooks.example.com/' + 'x'.repeat(100),
    signingSecret: 'whsec_' + randomBytes(24).toString('base64'),
  });
  const sealed = box.seal(json, slot);
  const [, sealMs] = time(() => {
    for (let i = 0; i < 20_000; i++) box.seal(json, slot);
  });
  const [, openMs] = time(() => {
    for (let i = 0; i < 20_000; i++) box.open(sealed, slot);
  });
  console.log(
    `seal ${((sealMs * 1000) / 20_000).toFixed(1)} µs, open ${((openMs * 1000) / 20_000).toFixed(1)} µs (${json.length} B of JSON)`,
  );

  const log = pino({ level: 'info' }, { write() {} });
  const lim = new LogLimiter(log, { flushEveryMs: 0 });
  const [, limMs] = time(() => {
    for (let i = 0; i < 1_000_000; i++) if (lim.admit(log, 'warn', 'tenant', 'filter_evaluation')) log.warn('x');
  });
  console.log(
    `log limiter: 1,000,000 lines of one tenant+cause in ${limMs.toFixed(0)} ms (${((limMs * 1000) / 1_000_000).toFixed(2)} µs/line)`,
  );

  const dir = mkdtempSync(join(tmpdir(), 'cmn-bench-secrets-'));
  await pass('sqlite', async (b) => {
    const s = await openStore(`sqlite:${join(dir, 'store.db')}`, b ? { secretBox: b } : {});
    await s.migrate();
    return s;
  });
  if (process.env['DATABASE_URL']) {
    const schema = `bench_${randomUUID().replace(/-/g, '')}`;
    await pass('postgres', async (b) => {
      const s = await openStore(process.env['DATABASE_URL']!, { schema, ...(b ? { secretBox: b } : {}) });
      await s.migrate();
      return s;
    });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) await run();
