/**
 * Worst-case cost of the request limits themselves (docs/security.md#request-limits), ~10 s:
 *   npx node --disable-warning=ExperimentalWarning --import tsx bench/requests.ts
 * Pure checks on 1 MiB hostile inputs, then the 100-alias GraphQL request against the real service.
 */
import { pino } from 'pino';
import { loadServeConfig } from '../src/config.js';
import { GRAPHQL_LIMITS, measureRequest, parseLimited } from '../src/http/graphql/cost.js';
import { buildApiSchema } from '../src/http/graphql/schema.js';
import { jsonDepthViolation } from '../src/http/limits.js';
import { startService } from '../src/main.js';
import { limitsFile } from '../test/support/limits.js';

const MiB = 1024 * 1024;

function report(label: string, times: number[], extra = ''): void {
  times.sort((a, b) => a - b);
  const med = times[Math.floor(times.length / 2)]!;
  console.log(`${label.padEnd(64)} median ${med.toFixed(2)} ms, worst ${times.at(-1)!.toFixed(2)} ms of ${times.length}${extra}`);
}

function worst(label: string, fn: () => unknown, runs = 20): void {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  report(label, times);
}

export async function run(): Promise<void> {
  const schema = buildApiSchema();
  const check = (q: string) => {
    const p = parseLimited(q);
    if ('doc' in p) measureRequest(schema, p.doc, undefined, undefined);
  };
  const manyFields = `{ ${'eventTypes { id } '.repeat(MiB / 19)} }`;
  const longName = `{ ${'a'.repeat(MiB - 4)} }`;
  worst('graphql: 1 MiB of fields (token cap hit)', () => check(manyFields));
  worst('graphql: 1 MiB of one long name (one token)', () => check(longName));
  const frag = ['fragment F0 on Query { eventTypes { id } }'];
  for (let i = 1; i < 400; i++) frag.push(`fragment F${i} on Query { ...F${i - 1} ...F${i - 1} }`);
  worst('graphql: fragment bomb, 400 levels of 2x spreads', () => check(`{ ...F399 } ${frag.join(' ')}`));
  const aliases = `{ ${Array.from({ length: GRAPHQL_LIMITS.maxAliases }, (_, i) => `a${i}: deliveries(first: 16) { nodes { id status lastError } }`).join(' ')} }`;
  worst('graphql: largest accepted alias set', () => check(aliases));
  const wide = JSON.parse(`[${'0,'.repeat(MiB / 2 - 1)}0]`) as unknown;
  worst('json depth: 1 MiB flat array (524,288 members)', () => jsonDepthViolation(wide), 10);
  const deep = JSON.parse('['.repeat(MiB / 2) + ']'.repeat(MiB / 2)) as unknown;
  worst('json depth: 1 MiB nested 524,288 deep', () => jsonDepthViolation(deep), 10);
  const objs = JSON.parse(`[${'{"a":{"b":[1]}},'.repeat(MiB / 17)}{}]`) as unknown;
  worst('json depth: 1 MiB of small objects', () => jsonDepthViolation(objs), 10);

  const cfg = loadServeConfig(
    [
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--store',
      'sqlite::memory:',
      '--kube',
      'off',
      '--api-key',
      'bench-key-0123456789abcdef',
      ...limitsFile({ deliveryWorkers: 0 }),
    ],
    {},
  );
  const svc = await startService(cfg, pino({ level: 'silent' }));
  try {
    const q = `{ ${Array.from({ length: 100 }, (_, i) => `d${i}: deliveries(first: 500) { nodes { id status lastError } }`).join(' ')} }`;
    const times: number[] = [];
    let status = 0;
    for (let i = 0; i < 20; i++) {
      const t = process.hrtime.bigint();
      const res = await fetch(`${svc.url}/graphql`, {
        method: 'POST',
        headers: { 'svc-api-key': 'bench-key-0123456789abcdef', 'content-type': 'application/json' },
        body: JSON.stringify({ query: q }),
      });
      status = res.status;
      await res.text();
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    report('http: issue finding 5 request (100 x deliveries(first: 500))', times, `, HTTP ${status}`);
  } finally {
    await svc.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
