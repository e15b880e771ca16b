/**
 * Routing benchmark: events/s through 10, 1,000 and 10,000 routers of one family, for
 *   (a) CEL filters with the prefilter index (matchRouters, the production hot path),
 *   (b) the same CEL filters, brute force (every router evaluated, as decideRouters does),
 *   (c) the same filters written as plain JS predicates, brute force,
 * all in one run. Filters follow the spec patterns with distinct values per router (cluster ids, cluster
 * names, namespaces, issuer names; application ids, rule ids), plus a share of substring filters
 * (`data.statusMessage.contains('…')`, and in one mix `startsWith` / `endsWith`), which the index finds by
 * scanning the event's string once.
 *
 * Run: `npm run bench` (all benches) or `node --import tsx bench/routing.ts`.
 * Knobs (environment): BENCH_CELL_MS (measuring time per cell, default 1200), BENCH_SIZES (default
 * 10,1000,10000), BENCH_SUBSTRING (share of substring filters, default 0.1; BENCH_UNINDEXED is the old name).
 */
import { pathToFileURL } from 'node:url';
import { familyOf, type EventTypeId, type InternalEvent } from '../src/events/families.js';
import { buildPrefilterIndex } from '../src/routing/index-prefilter.js';
import { decideRouters, matchRouters, routingIndex, type RoutingSnapshot } from '../src/routing/match.js';
import { RoutingSnapshots } from '../src/routing/snapshot.js';
import type { IntegrationRecord, MonitoringConfigRecord, RouterRecord, Store } from '../src/store/types.js';
import { expiringCertificate, issuerActive, issuerNotReady } from '../test/fixtures/events.js';
import { ROUTER_POLICY_DEFAULTS } from '../src/model/records.js';

export interface RoutingBenchOptions {
  cellMs?: number;
  sizes?: number[];
  substringShare?: number;
  /** Also run the health mix with no substring filter (default true). */
  withoutSubstring?: boolean;
  /** Where the table goes (default: console.log). */
  print?: (line: string) => void;
}

type Predicate = (e: InternalEvent) => boolean;
interface BenchRouter {
  cel: string;
  js: Predicate;
}

interface Scenario {
  name: string;
  family: EventTypeId;
  routers(n: number, substringShare: number): BenchRouter[];
  /** The i-th event of the pool for n routers (values drawn from the routers' value space). */
  event(i: number, n: number, rand: () => number): InternalEvent;
}

const COMPANY = '11111111-1111-4111-8111-111111111111';
const POOL = 512;

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const clusterId = (i: number) => `c0ffee00-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const clusterName = (i: number) => `cluster-${i}`;
const namespace = (i: number) => `ns-${i}`;
const issuerName = (i: number) => `issuer-${i}`;
const word = (i: number) => `w${i}x`;

/** `data.statusMessage.contains('w<i>x')`. */
const containsWord = (i: number): BenchRouter => {
  const w = word(i);
  return { cel: `data.statusMessage.contains('${w}')`, js: (e) => str(e.data.statusMessage)?.includes(w) === true };
};

/** contains, startsWith and endsWith in turn, each with the router's own word. */
const affixWord = (i: number): BenchRouter => {
  const w = word(i);
  switch (i % 3) {
    case 0:
      return containsWord(i);
    case 1:
      return { cel: `data.statusMessage.startsWith('${w} ')`, js: (e) => str(e.data.statusMessage)?.startsWith(`${w} `) === true };
    default:
      return { cel: `data.statusMessage.endsWith(' ${w}')`, js: (e) => str(e.data.statusMessage)?.endsWith(` ${w}`) === true };
  }
};

/** Spec patterns of the issuer health family, one per router, with values unique to that router. */
const healthScenario = (name: string, substring: (i: number) => BenchRouter, message: (pickI: () => number) => string): Scenario => ({
  name,
  family: 'certmgr-issuer-health-notification-config',
  routers(n, substringShare) {
    return Array.from({ length: n }, (_, i): BenchRouter => {
      if (everyKth(i, substringShare)) return substring(i);
      switch (i % 4) {
        case 0: {
          const [a, b] = [clusterId(i), clusterId(i + 1)];
          return {
            cel: `type.endsWith('.notready') && (data.clusterId == '${a}' || data.clusterId == '${b}')`,
            js: (e) => e.type.endsWith('.notready') && (e.data.clusterId === a || e.data.clusterId === b),
          };
        }
        case 1: {
          const ns = namespace(i);
          return {
            cel: `type.endsWith('.notready') && (data.namespace == '${ns}')`,
            js: (e) => e.type.endsWith('.notready') && e.data.namespace === ns,
          };
        }
        case 2: {
          const name = issuerName(i);
          return {
            cel: `type.endsWith('.active') && data.issuerName == '${name}'`,
            js: (e) => e.type.endsWith('.active') && e.data.issuerName === name,
          };
        }
        default: {
          const name = clusterName(i);
          return {
            cel: `type.endsWith('.notready') && data.clusterName == '${name}'`,
            js: (e) => e.type.endsWith('.notready') && e.data.clusterName === name,
          };
        }
      }
    });
  },
  event(_i, n, rand) {
    const pickI = () => Math.floor(rand() * n);
    const data = {
      clusterId: clusterId(pickI()),
      clusterName: clusterName(pickI()),
      namespace: namespace(pickI()),
      issuerName: issuerName(pickI()),
      statusMessage: message(pickI),
    };
    return rand() < 0.5 ? issuerNotReady(data) : issuerActive(data);
  },
});

const HEALTH = healthScenario(
  'issuer health',
  containsWord,
  (pickI) => `Failed to register ACME account (${word(pickI())}): 400 urn:ietf:params:acme:error:invalidEmail`,
);

const HEALTH_AFFIX = healthScenario(
  'issuer health, contains/startsWith/endsWith',
  affixWord,
  (pickI) =>
    `${word(pickI())} Failed to register ACME account (${word(pickI())}): 400 urn:ietf:params:acme:error:invalidEmail ${word(pickI())}`,
);

const appId = (i: number) => `app-${i}`;

/** Spec patterns of the expiration family: one application, or one rule. */
const EXPIRY: Scenario = {
  name: 'expiration',
  family: 'cert-expiry-ext-notification-config',
  routers(n, substringShare) {
    return Array.from({ length: n }, (_, i): BenchRouter => {
      if (everyKth(i, substringShare)) {
        const w = word(i);
        return { cel: `data.message.contains('${w}')`, js: (e) => str(e.data.message)?.includes(w) === true };
      }
      if (i % 2 === 0) {
        const app = appId(i);
        return {
          cel: `'${app}' in data.applicationIds`,
          js: (e) => Array.isArray(e.data.applicationIds) && e.data.applicationIds.includes(app),
        };
      }
      const rule = i + 1;
      return { cel: `data.ruleId == ${rule}`, js: (e) => e.data.ruleId === rule };
    });
  },
  event(_i, n, rand) {
    const pickI = () => Math.floor(rand() * n);
    const apps = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => appId(pickI()));
    return expiringCertificate({
      applicationIds: apps,
      ruleId: 1 + pickI(),
      message: `Certificate for ${apps.join(', ')} (${word(pickI())}) expires in 14 days`,
    });
  },
};

/** Spreads the substring routers evenly (every k-th router). */
function everyKth(i: number, share: number): boolean {
  if (share <= 0) return false;
  const every = Math.max(1, Math.round(1 / share));
  return i % every === every - 1;
}

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function loadSnapshot(family: EventTypeId, filters: string[]): Promise<RoutingSnapshot> {
  const integration: IntegrationRecord = {
    id: 'i1',
    companyId: COMPANY,
    name: 'bench',
    type: 'WEBHOOK',
    enabled: true,
    config: {},
    secrets: {},
    managedBy: null,
    createdAt: 0,
    updatedAt: 0,
  };
  const routers = filters.map((filter, i): RouterRecord => ({
    id: `r${i}`,
    companyId: COMPANY,
    name: `r${i}`,
    eventTypeId: family,
    enabled: true,
    filter,
    integrationId: 'i1',
    templateId: null,
    generation: 'ROUTER',
    ...ROUTER_POLICY_DEFAULTS,
    managedBy: null,
    createdAt: 0,
    updatedAt: 0,
  }));
  const monitoring: MonitoringConfigRecord = {
    id: 'm',
    companyId: COMPANY,
    enabled: true,
    thresholds: [30, 14, 7],
    applicationIds: [],
    includeUnassignedCertificates: true,
    updatedAt: 0,
  };
  const store = {
    listRouters: async () => routers,
    listIntegrations: async () => [integration],
    getMonitoringConfig: async () => monitoring,
    listLiveSilences: async () => [],
    routingFingerprint: async () => 'bench',
  } as unknown as Store;
  return new RoutingSnapshots(store).get(COMPANY);
}

interface Cell {
  eventsPerSec: number;
  usPerEvent: number;
}

/** Runs `step` over the event pool for about `ms` (after a short warm-up); checks the clock every event. */
function measure(events: readonly InternalEvent[], ms: number, step: (e: InternalEvent) => number): Cell {
  let sink = 0;
  const run = (budget: number): { n: number; elapsed: number } => {
    const start = performance.now();
    let n = 0;
    let elapsed: number;
    do {
      sink += step(events[n % events.length] as InternalEvent);
      n++;
      elapsed = performance.now() - start;
    } while (elapsed < budget);
    return { n, elapsed };
  };
  run(Math.min(250, ms / 4));
  const { n, elapsed } = run(ms);
  if (sink === -1) console.log(''); // keep the work observable
  return { eventsPerSec: (n / elapsed) * 1000, usPerEvent: (elapsed / n) * 1000 };
}

interface Row {
  scenario: string;
  routers: number;
  loadMs: number;
  indexMs: number;
  candidates: number;
  matches: number;
  index: Cell;
  celBrute: Cell;
  jsBrute: Cell;
}

export async function runRoutingBench(opts: RoutingBenchOptions = {}): Promise<Row[]> {
  const cellMs = opts.cellMs ?? Number(process.env.BENCH_CELL_MS ?? 1200);
  const sizes = opts.sizes ?? (process.env.BENCH_SIZES ?? '10,1000,10000').split(',').map(Number);
  const share = opts.substringShare ?? Number(process.env.BENCH_SUBSTRING ?? process.env.BENCH_UNINDEXED ?? 0.1);
  const print = opts.print ?? ((l: string) => console.log(l));
  print(`routing bench: ${sizes.join(' / ')} routers of one family, ~${cellMs} ms per cell`);
  print(`node ${process.version}, ${process.arch}`);

  const rows: Row[] = [];
  // The spec-like mixes with substring filters, then the health mix with none (the index's own scaling).
  const runs: [Scenario, number][] = [
    [HEALTH, share],
    [EXPIRY, share],
    [HEALTH_AFFIX, share],
  ];
  if (share > 0 && opts.withoutSubstring !== false) runs.push([HEALTH, 0]);
  for (const [scenario, substringShare] of runs) {
    for (const n of sizes) {
      const routers = scenario.routers(n, substringShare);
      const rand = rng(42 + n);
      const events = Array.from({ length: POOL }, (_, i) => scenario.event(i, n, rand));

      const t0 = performance.now();
      const snap = await loadSnapshot(
        scenario.family,
        routers.map((r) => r.cel),
      );
      const loadMs = performance.now() - t0;
      const index = routingIndex(snap, scenario.family);
      const family = snap.byFamily.get(scenario.family) ?? [];
      // The index alone (load ms also compiles every filter): a fresh build over the compiled routers.
      const t1 = performance.now();
      buildPrefilterIndex(family, familyOf(scenario.family).types);
      const indexMs = performance.now() - t1;
      const predicates: Predicate[] = routers.map((r) => r.js);

      // The three must agree before they are timed.
      let candidates = 0;
      let matches = 0;
      const checkN = Math.min(POOL, Math.max(20, Math.floor(200_000 / n)));
      for (const e of events.slice(0, checkN)) {
        const viaIndex = matchRouters(e, snap).matched.map((r) => r.id);
        const viaCel = decideRouters(e, snap).flatMap((d) => (d.verdict === 'MATCHED' ? [d.router.id] : []));
        const viaJs = predicates.flatMap((p, i) => (p(e) ? [`r${i}`] : []));
        if (viaIndex.join() !== viaCel.join() || viaCel.join() !== viaJs.join()) {
          throw new Error(`${scenario.name}/${n}: methods disagree on ${JSON.stringify(e)}: ${viaIndex} | ${viaCel} | ${viaJs}`);
        }
        candidates += index.candidates(e).length;
        matches += viaIndex.length;
      }

      const indexCell = measure(events, cellMs, (e) => matchRouters(e, snap).matched.length);
      const celCell = measure(events, cellMs, (e) => {
        let m = 0;
        for (const cr of family) if (cr.filter?.evaluate(e).matched) m++;
        return m;
      });
      const jsCell = measure(events, cellMs, (e) => {
        let m = 0;
        for (const p of predicates) if (p(e)) m++;
        return m;
      });
      rows.push({
        scenario:
          substringShare > 0
            ? `${scenario.name}, ${Math.round(substringShare * 100)}% substring filters`
            : `${scenario.name}, no substring filters`,
        routers: n,
        loadMs,
        indexMs,
        candidates: candidates / checkN,
        matches: matches / checkN,
        index: indexCell,
        celBrute: celCell,
        jsBrute: jsCell,
      });
    }
  }
  print('');
  for (const line of table(rows)) print(line);
  print('');
  print('(a) CEL + index: matchRouters (prefilter index, full filter on candidates only). (b) CEL brute force: every');
  print("router's compiled filter. (c) JS brute force: the same filters as hand-written predicates, every router.");
  print('cand./ev: routers the index evaluates per event; match/ev: routers that fire; load: store → compiled + indexed snapshot;');
  print('index: building the prefilter index alone over the compiled routers.');
  return rows;
}

function table(rows: Row[]): string[] {
  const fmtRate = (c: Cell) => Math.round(c.eventsPerSec).toLocaleString('en-US');
  const fmtUs = (c: Cell) =>
    c.usPerEvent < 10
      ? c.usPerEvent.toFixed(2)
      : c.usPerEvent < 1000
        ? c.usPerEvent.toFixed(1)
        : Math.round(c.usPerEvent).toLocaleString('en-US');
  const ratio = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) + '×';
  const header = [
    'family',
    'routers',
    'load ms',
    'index ms',
    'cand./ev',
    'match/ev',
    '(a) CEL+index ev/s',
    'µs/ev',
    '(b) CEL brute ev/s',
    'µs/ev',
    '(c) JS brute ev/s',
    'µs/ev',
    'a/b',
    'a/c',
    'c/b',
  ];
  const body = rows.map((r) => [
    r.scenario,
    r.routers.toLocaleString('en-US'),
    r.loadMs.toFixed(0),
    r.indexMs.toFixed(1),
    r.candidates.toFixed(2),
    r.matches.toFixed(2),
    fmtRate(r.index),
    fmtUs(r.index),
    fmtRate(r.celBrute),
    fmtUs(r.celBrute),
    fmtRate(r.jsBrute),
    fmtUs(r.jsBrute),
    ratio(r.index.eventsPerSec / r.celBrute.eventsPerSec),
    ratio(r.index.eventsPerSec / r.jsBrute.eventsPerSec),
    ratio(r.jsBrute.eventsPerSec / r.celBrute.eventsPerSec),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]) =>
    '| ' + cells.map((c, i) => (i < 1 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join(' | ') + ' |';
  return [
    line(header),
    '|' + widths.map((w, i) => (i < 1 ? ':' : '-') + '-'.repeat(w) + (i < 1 ? '-' : ':')).join('|') + '|',
    ...body.map(line),
  ];
}

export async function run(): Promise<void> {
  await runRoutingBench();
}

// Standalone: `node --import tsx bench/routing.ts`.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await run();
