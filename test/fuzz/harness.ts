/**
 * Shared harness of the property-based fuzz suite: fast-check parameters (seed, runs, time limit), one
 * HTTP call under the liveness deadline, the tenant state as seen through the API, warn-log counting, and the
 * forced-GC heap measurement. The service runs in this process (test/support/service.ts), so its heap is ours.
 */
import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { Kind, parse } from 'graphql';
import { expect } from 'vitest';
import { MONITORING_CONFIG_PATH } from '../../src/client/operations.js';
import { COMPANY_A, COMPANY_B, KEY_A, KEY_B, startTestService, type StoreKind, type TestService } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

/** Liveness bound: every request (and /healthz while it runs) must be answered within this. Not a perf target. */
const DEADLINE_MS = envInt('FUZZ_DEADLINE_MS', 10_000);
/** Heap after the run (forced GC) may exceed the baseline by at most this (see docs/security.md#fuzz-suite). */
const HEAP_MARGIN_BYTES = envInt('FUZZ_HEAP_MARGIN_MB', 48) * 1024 * 1024;
/** warn/error log lines one request may cause (logs are rate-limited per tenant and cause). */
const MAX_WARN_LINES_PER_REQUEST = 100;
/** A response larger than this is an amplification (a small request of aliases answered by a huge body). */
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

function envInt(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

/**
 * fast-check parameters of one property. Deterministic in CI (a fixed seed per property); FUZZ_SEED overrides it
 * (FUZZ_SEED=random: a fresh one), FUZZ_RUNS multiplies nothing but replaces the run count, FUZZ_TIME_LIMIT_S caps
 * one property's wall time (shrinking included; a failure found before the cap is still reported).
 */
export function fuzzParams(defaultSeed: number, defaultRuns: number): fc.Parameters<unknown> {
  const s = process.env.FUZZ_SEED;
  const seed = s === 'random' ? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0 : s ? Number(s) : defaultSeed;
  if (!Number.isInteger(seed)) throw new Error(`FUZZ_SEED must be an integer or 'random', got ${JSON.stringify(s)}`);
  return {
    seed,
    numRuns: envInt('FUZZ_RUNS', defaultRuns),
    interruptAfterTimeLimit: envInt('FUZZ_TIME_LIMIT_S', 90) * 1000,
    // fast-check prints seed, path and the shrunk counterexample; replay with FUZZ_SEED=<seed> FUZZ_RUNS=...
    verbose: 0,
  };
}

/** Runs an async property over one arbitrary; on failure the error carries the seed and the shrunk counterexample. */
export async function check<T>(params: fc.Parameters<unknown>, arb: fc.Arbitrary<T>, body: (value: T) => Promise<void>): Promise<void> {
  await fc.assert(fc.asyncProperty(arb, body), params as fc.Parameters<[T]>);
}

export interface CallResult {
  status: number;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  bytes: number;
  /** warn/error lines the service logged while this call ran. */
  warnLines: number;
}

export interface CallInit {
  method?: string;
  key?: string | null;
  /** Sent as is (already serialized); JSON.stringify(json) otherwise. */
  raw?: string;
  json?: unknown;
  contentType?: string;
}

/** Serializes concurrent calls' log accounting: the suite issues one request at a time (plus /healthz probes). */
export async function call(svc: TestService, path: string, init: CallInit = {}): Promise<CallResult> {
  const { method = 'GET', key = KEY_A, raw, json, contentType = 'application/json' } = init;
  const headers: Record<string, string> = {};
  if (key !== null) headers['svc-api-key'] = key;
  let body: string | undefined;
  if (raw !== undefined) body = raw;
  else if (json !== undefined) body = JSON.stringify(json);
  if (body !== undefined) headers['content-type'] = contentType;
  const logStart = svc.logs.length;
  let res: Response;
  let text: string;
  // The deadline is a timeout (abort), never a timing assertion; /healthz is probed in parallel with the same bound.
  const probe = healthzWithin(svc);
  probe.catch(() => undefined); // handled below; this only keeps an early rejection from counting as unhandled
  try {
    res = await fetch(svc.url + path, {
      method,
      headers,
      ...(body !== undefined ? { body } : {}),
      signal: AbortSignal.timeout(DEADLINE_MS),
    });
    text = await res.text();
  } catch (e) {
    if ((e as Error).name === 'TimeoutError')
      throw new Error(`${method} ${path} was not answered within the liveness bound of ${DEADLINE_MS} ms`, { cause: e });
    throw e;
  }
  await probe;
  const warnLines = countWarnLines(svc.logs, logStart);
  svc.logs.length = 0; // the harness keeps no log history: it would count against the heap baseline
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, text, json: parsed, bytes: Buffer.byteLength(text), warnLines };
}

/** /healthz, asked while another request runs, must answer 200 within the deadline (the event loop is not held). */
async function healthzWithin(svc: TestService): Promise<void> {
  let res: Response;
  try {
    res = await fetch(svc.url + '/healthz', { signal: AbortSignal.timeout(DEADLINE_MS) });
    await res.text();
  } catch (e) {
    if ((e as Error).name === 'TimeoutError')
      throw new Error(`/healthz was not answered within ${DEADLINE_MS} ms while a request ran (event loop held)`, { cause: e });
    throw new Error(`/healthz failed while a request ran (service down?): ${(e as Error).message}`, { cause: e });
  }
  if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
}

function countWarnLines(logs: string[], from: number): number {
  let n = 0;
  for (let i = from; i < logs.length; i++) {
    const m = /"level":(\d+)/.exec(logs[i] ?? '');
    if (m && Number(m[1]) >= 40) n++;
  }
  return n;
}

/** GraphQL POST with the deadline; `body` is sent as the JSON body (or `raw` as is). */
export function gql(svc: TestService, query: string, variables?: unknown, key: string = KEY_A): Promise<CallResult> {
  return call(svc, '/graphql', { method: 'POST', key, json: variables === undefined ? { query } : { query, variables } });
}

/** Properties every answer must have: no 5xx, no masked internal error, bounded size and bounded warn logging. */
export function expectSane(r: CallResult, what: string): void {
  expect(r.status, `${what}: HTTP ${r.status} ${r.text.slice(0, 300)}`).toBeLessThan(500);
  const codes = graphqlErrorCodes(r);
  expect(codes, `${what}: masked internal error ${r.text.slice(0, 300)}`).not.toContain('INTERNAL_SERVER_ERROR');
  expect(codes, `${what}: masked internal error ${r.text.slice(0, 300)}`).not.toContain('INTERNAL');
  if (r.json && typeof r.json === 'object' && !Array.isArray(r.json) && 'error' in r.json) {
    expect(r.json.error?.code, `${what}: internal error ${r.text.slice(0, 300)}`).not.toBe('INTERNAL');
  }
  expect(r.bytes, `${what}: answered ${r.bytes} bytes (amplification)`).toBeLessThanOrEqual(MAX_RESPONSE_BYTES);
  expect(r.warnLines, `${what}: wrote ${r.warnLines} warn/error log lines`).toBeLessThanOrEqual(MAX_WARN_LINES_PER_REQUEST);
}

function graphqlErrorCodes(r: CallResult): string[] {
  const errs =
    r.json && typeof r.json === 'object' && Array.isArray(r.json.errors) ? (r.json.errors as { extensions?: { code?: unknown } }[]) : [];
  return errs.map((e) => String(e.extensions?.code ?? ''));
}

/**
 * Whether a GraphQL request certainly did nothing: refused before execution (HTTP 4xx, or no `data`: parse,
 * validation or variable errors), or every root field came back null in a document with a single root field.
 * (Several mutation fields run one after another and a later non-null error nulls `data` although an earlier
 * field committed: standard GraphQL, so such documents are not checked for "no change".)
 */
export function graphqlRejected(r: CallResult, query: unknown): boolean {
  if (r.status >= 400) return true;
  if (!r.json || typeof r.json !== 'object' || !('data' in r.json) || r.json.data === undefined) return true;
  const data = r.json.data as Record<string, unknown> | null;
  if (data !== null && Object.values(data).some((v) => v !== null)) return false;
  return rootFieldCount(query) === 1;
}

function rootFieldCount(query: unknown): number {
  if (typeof query !== 'string') return -1;
  try {
    const doc = parse(query);
    const ops = doc.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
    if (ops.length !== 1 || doc.definitions.length !== 1) return -1;
    const sel = ops[0]!.selectionSet.selections;
    return sel.every((s) => s.kind === Kind.FIELD) ? sel.length : -1;
  } catch {
    return -1;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Tenant state as the API shows it

const STATE_QUERY = /* GraphQL */ `
  query FuzzState {
    integrations {
      totalCount
      nodes {
        id
        name
        enabled
        type
        emailTo
        emailFrom
        webhookSigned
        managedBy
        createdAt
        updatedAt
      }
    }
    searchNotificationRoutingConfigurations {
      totalCount
      nodes {
        id
        name
        enabled
        generation
        managedBy
        createdAt
        updatedAt
        eventType {
          id
        }
        notificationRouterFilterConfig {
          advancedFilterExpression
        }
        notificationRouterIntegrationConfig {
          notificationRouterIntegrationID
          notificationRouterTemplateID
        }
      }
    }
  }
`;
const companyOf = (key: string): string => (key === KEY_B ? COMPANY_B : COMPANY_A);

export interface TenantState {
  monitoring: unknown;
  integrations: unknown;
  routers: unknown;
  deliveries: number;
  /** Distinct events with at least one delivery (the suites install catch-all routers where events matter). */
  events: number;
  /**
   * Per integration id, a digest of its secrets and settings as stored: the API never returns secrets, so a
   * refused update that wrote a routing key, URL or signing secret would otherwise go unseen.
   */
  stored: Record<string, string>;
}

/** The tenant's full state via its own API key (config, integrations, routers) plus its events/deliveries count. */
export async function tenantState(svc: TestService, key: string): Promise<TenantState> {
  const m = await call(svc, MONITORING_CONFIG_PATH, { key });
  if (m.status !== 200) throw new Error(`state: GET monitoring config answered ${m.status}`);
  const s = await gql(svc, STATE_QUERY, undefined, key);
  if (s.status !== 200 || s.json?.errors) throw new Error(`state: query failed: ${s.text.slice(0, 300)}`);
  // Counts come from the store: the API has no event count, and paging 10,000s of deliveries per check is slow.
  let deliveries = 0;
  const events = new Set<string>();
  let before: { createdAt: number; id: string } | undefined;
  for (;;) {
    const page = await svc.store.listDeliveries(companyOf(key), { limit: 1000, ...(before ? { before } : {}) });
    deliveries += page.length;
    for (const d of page) events.add(d.eventId);
    const last = page.at(-1);
    if (page.length < 1000 || !last) break;
    before = { createdAt: last.createdAt, id: last.id };
  }
  const stored: Record<string, string> = {};
  for (const i of await svc.store.listIntegrations(companyOf(key)))
    stored[i.id] = createHash('sha256')
      .update(JSON.stringify([i.type, i.config, Object.entries(i.secrets).sort(), i.enabled, i.name, i.managedBy]))
      .digest('hex');
  return {
    monitoring: m.json,
    integrations: s.json.data.integrations,
    routers: s.json.data.searchNotificationRoutingConfigurations,
    deliveries,
    events: events.size,
    stored,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Heap

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (opts?: unknown) => void;

/** heapUsed after full, repeated GCs (finalizers and weak maps settle over a few cycles). */
export async function settledHeap(): Promise<number> {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

// ---------------------------------------------------------------------------------------------------------------
// One fuzz fixture per file: the service, tenant B's records and its state, the heap baseline.

export interface Fixture {
  svc: TestService;
  kind: StoreKind;
  stateB: TenantState;
  heapBaseline: number;
}

const FUZZ_SERVICE_ARGS = ['--log-level', 'debug', ...limitsFile({ deliveryWorkers: 0 })];

/** Starts the service, gives tenant B an integration, a router and a monitoring config, runs `warm`, measures the heap. */
export async function startFixture(kind: StoreKind, warm: (svc: TestService) => Promise<void>): Promise<Fixture> {
  const svc = await startTestService(kind, FUZZ_SERVICE_ARGS);
  const bi = await gql(
    svc,
    `mutation { createIncidentMgmtIntegration(input: { name: "B pager", incidentMgmtParams: { IntegrationKey: "b-key-0123456789" } }) { id } }`,
    undefined,
    KEY_B,
  );
  const biId = bi.json?.data?.createIncidentMgmtIntegration?.id as string | undefined;
  if (!biId) throw new Error(`fixture: B integration: ${bi.text}`);
  const br = await gql(
    svc,
    `mutation($i: UUID!) { createNotificationRouter(details: { name: "B router", eventTypeId: "certmgr-issuer-health-notification-config" }, filterConfig: { advancedFilterExpression: "" }, integrationConfig: { integrationId: $i }) { id } }`,
    { i: biId },
    KEY_B,
  );
  if (!br.json?.data?.createNotificationRouter?.id) throw new Error(`fixture: B router: ${br.text}`);
  const put = await call(svc, MONITORING_CONFIG_PATH, {
    method: 'PUT',
    key: KEY_B,
    json: {
      inventoryMonitoringConfiguration: {
        inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
        enabled: false,
        thresholds: [9],
        applicationIds: ['b-app'],
        includeUnassignedCertificates: false,
      },
    },
  });
  if (put.status !== 200) throw new Error(`fixture: B monitoring config: ${put.text}`);
  await warm(svc);
  const stateB = await tenantState(svc, KEY_B);
  const heapBaseline = await settledHeap();
  return { svc, kind, stateB, heapBaseline };
}

/** Cross-tenant property: B's state never changes from A's requests. */
export async function expectBUnchanged(f: Fixture, what: string): Promise<void> {
  expect(await tenantState(f.svc, KEY_B), `${what}: tenant B's state changed`).toEqual(f.stateB);
}

/** Memory back to its baseline after the run, with the documented margin. */
export async function expectHeapBack(f: Fixture): Promise<void> {
  const after = await settledHeap();
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  expect(
    after,
    `heap after the run ${mb(after)} vs baseline ${mb(f.heapBaseline)} (+${mb(HEAP_MARGIN_BYTES)} allowed)`,
  ).toBeLessThanOrEqual(f.heapBaseline + HEAP_MARGIN_BYTES);
}

export { KEY_A, KEY_B };
