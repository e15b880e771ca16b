/**
 * One CEL filter evaluation (issue 12): the spec's filter patterns (bench/routing.ts) and the un-indexable
 * `contains` ones, each evaluated as the product does (CompiledFilter.evaluate, closures from
 * src/cel/compile-js.ts), with @bufbuild/cel's interpreter only (the previous engine), and as a hand-written JS
 * predicate, over the same events in the same run: ns per evaluation and the ratios.
 *
 * Each cell's engines run in interleaved rounds (best round of each), so load on a shared machine hits them alike.
 *
 * Run: `node --import tsx bench/cel-eval.ts` (about 35 s). Knobs: BENCH_CEL_EVAL_MS (time per cell, default 1000).
 */
import { pathToFileURL } from 'node:url';
import { compileFilter, type CompiledFilter } from '../src/cel/index.js';
import type { EventTypeId, InternalEvent } from '../src/events/families.js';
import { expiringCertificate, issuerActive, issuerNotReady } from '../test/fixtures/events.js';

const CELL_MS = Number(process.env.BENCH_CEL_EVAL_MS ?? 1000);
const ISSUER: EventTypeId = 'certmgr-issuer-health-notification-config';
const EXPIRY: EventTypeId = 'cert-expiry-ext-notification-config';

type Predicate = (e: InternalEvent) => boolean;
interface Case {
  name: string;
  family: EventTypeId;
  cel: string;
  js: Predicate;
  events: InternalEvent[];
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const a = 'c0ffee00-0000-4000-8000-000000000007';
const b = 'c0ffee00-0000-4000-8000-000000000008';

function issuerEvents(): InternalEvent[] {
  return Array.from({ length: 64 }, (_, i) => {
    const data = {
      clusterId: i % 8 === 0 ? a : `c0ffee00-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
      clusterName: `cluster-${i % 10}`,
      namespace: `ns-${i % 10}`,
      issuerName: `issuer-${i % 10}`,
      statusMessage: `Failed to register ACME account (w${i}x): 400 urn:ietf:params:acme:error:invalidEmail`,
    };
    return i % 2 === 0 ? issuerNotReady(data) : issuerActive(data);
  });
}

function expiryEvents(): InternalEvent[] {
  return Array.from({ length: 64 }, (_, i) => {
    const apps = Array.from({ length: 1 + (i % 3) }, (_, k) => `app-${(i + k) % 10}`);
    return expiringCertificate({
      applicationIds: apps,
      ruleId: 1 + (i % 10),
      message: `Certificate for ${apps.join(', ')} (w${i}x) expires in 14 days`,
    });
  });
}

function cases(): Case[] {
  const issuer = issuerEvents();
  const expiry = expiryEvents();
  return [
    {
      // not a filter anyone writes: the fixed cost of one evaluation (call, family and data checks, result)
      name: 'fixed cost: the constant filter `true`',
      family: ISSUER,
      cel: 'true',
      js: () => true,
      events: issuer,
    },
    {
      name: 'issuer: type suffix and one of two cluster ids',
      family: ISSUER,
      cel: `type.endsWith('.notready') && (data.clusterId == '${a}' || data.clusterId == '${b}')`,
      js: (e) => e.type.endsWith('.notready') && (e.data.clusterId === a || e.data.clusterId === b),
      events: issuer,
    },
    {
      name: 'issuer: type suffix and namespace',
      family: ISSUER,
      cel: "type.endsWith('.notready') && (data.namespace == 'ns-3')",
      js: (e) => e.type.endsWith('.notready') && e.data.namespace === 'ns-3',
      events: issuer,
    },
    {
      name: 'issuer: type suffix and issuer name',
      family: ISSUER,
      cel: "type.endsWith('.active') && data.issuerName == 'issuer-3'",
      js: (e) => e.type.endsWith('.active') && e.data.issuerName === 'issuer-3',
      events: issuer,
    },
    {
      name: 'issuer: statusMessage.contains (un-indexable)',
      family: ISSUER,
      cel: "data.statusMessage.contains('w7x')",
      js: (e) => str(e.data.statusMessage)?.includes('w7x') === true,
      events: issuer,
    },
    {
      name: "expiry: 'app' in applicationIds",
      family: EXPIRY,
      cel: "'app-3' in data.applicationIds",
      js: (e) => Array.isArray(e.data.applicationIds) && e.data.applicationIds.includes('app-3'),
      events: expiry,
    },
    {
      name: 'expiry: ruleId == n',
      family: EXPIRY,
      cel: 'data.ruleId == 3',
      js: (e) => e.data.ruleId === 3,
      events: expiry,
    },
    {
      name: 'expiry: message.contains (un-indexable)',
      family: EXPIRY,
      cel: "data.message.contains('w7x')",
      js: (e) => str(e.data.message)?.includes('w7x') === true,
      events: expiry,
    },
  ];
}

/** Interleaved rounds per cell: the engines of a case take turns, so a load change on the machine hits all of them. */
const ROUNDS = 10;

/** A hand-written predicate, or a filter called as routing calls it (`filter.evaluate(event)`, then its result read). */
type Engine = ((e: InternalEvent) => boolean) | Pick<CompiledFilter, 'evaluate'>;

/**
 * Runs the engine over the events (cycled) for about `ms`: evaluations and ns. Two copies of one loop, so that each
 * engine is called straight from the loop (no wrapper closure around `evaluate`). The sink keeps the work.
 */
function runFor(events: readonly InternalEvent[], engine: Engine, ms: number): { n: number; ns: number } {
  let sink = 0;
  const start = process.hrtime.bigint();
  const until = start + BigInt(Math.round(ms * 1_000_000));
  let n = 0;
  if (typeof engine === 'function') {
    for (;;) {
      for (const e of events) if (engine(e)) sink++;
      n += events.length;
      if ((n & 0x3ff) < events.length && process.hrtime.bigint() > until) break;
    }
  } else {
    for (;;) {
      for (const e of events) if (engine.evaluate(e).matched) sink++;
      n += events.length;
      if ((n & 0x3ff) < events.length && process.hrtime.bigint() > until) break;
    }
  }
  if (sink < 0) console.log(sink);
  return { n, ns: Number(process.hrtime.bigint() - start) };
}

/**
 * ns per evaluation of each engine: a warm-up, then ROUNDS rounds in which every engine runs CELL_MS / ROUNDS in
 * turn; the best round of each engine (load on the machine only ever adds time).
 */
function measure(events: readonly InternalEvent[], engines: readonly Engine[]): number[] {
  for (const f of engines) runFor(events, f, Math.max(50, CELL_MS / 5));
  const rounds: number[][] = engines.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    engines.forEach((f, i) => {
      const { n, ns } = runFor(events, f, CELL_MS / ROUNDS);
      rounds[i]?.push(ns / n);
    });
  }
  return rounds.map((xs) => Math.min(...xs));
}

export async function run(): Promise<void> {
  const rows: string[][] = [];
  const all = cases().map((c) => ({
    c,
    fast: compileFilter(c.cel, c.family),
    slow: compileFilter(c.cel, c.family, { interpreterOnly: true }),
  }));
  // Every engine of every case once before measuring: the loop's call sites then see many predicates and many
  // filters, as a router loop does, instead of inlining whichever comes first.
  for (const { c, fast, slow } of all) for (const engine of [c.js, fast, slow]) runFor(c.events, engine, 20);
  for (const { c, fast, slow } of all) {
    for (const e of c.events) {
      const want = c.js(e);
      if (fast.evaluate(e).matched !== want || slow.evaluate(e).matched !== want) {
        throw new Error(`${c.name}: CEL and JS disagree on an event`);
      }
    }
    const [js = NaN, compiled = NaN, interpreted = NaN] = measure(c.events, [c.js, fast, slow]);
    rows.push([
      c.name,
      `\`${c.cel.length > 60 ? `${c.cel.slice(0, 57)}...` : c.cel}\``,
      fast.engine ?? '',
      js.toFixed(0),
      compiled.toFixed(0),
      interpreted.toFixed(0),
      `${(compiled / js).toFixed(2)}×`,
      `${(interpreted / js).toFixed(1)}×`,
    ]);
  }
  console.log('One filter evaluation, ns/eval (CompiledFilter.evaluate, family check and FilterResult included, for both CEL');
  console.log('engines, called from the loop as routing calls it; the JS predicate alone). Best of 10 interleaved rounds per');
  console.log('engine. Ratios against the hand-written JS of the same run.');
  console.log('');
  console.log('| filter | expression | engine | JS ns | compiled ns | interpreter ns | compiled / JS | interpreter / JS |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await run();
