/**
 * Fuzz: PUT of the monitoring configuration (REST) with arbitrary JSON, deep nesting, huge numbers and weird
 * strings, against the real service on SQLite and PostgreSQL. Properties: no 5xx, answered within the liveness
 * bound with /healthz answering meanwhile, a rejected PUT changes nothing, an accepted one is exactly what GET
 * returns, tenant B never changes, heap back to its baseline.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MONITORING_CONFIG_PATH } from '../../src/client/operations.js';
import type { StoreKind } from '../support/service.js';
import { deep, deepText, hostileJson, hostileNumber, hostileNumberLiteral, weirdString, type Deep } from './arbitraries.js';
import {
  call,
  check,
  expectBUnchanged,
  expectHeapBack,
  expectSane,
  fuzzParams,
  KEY_A,
  startFixture,
  tenantState,
  type Fixture,
} from './harness.js';

const P = 'inventoryMonitoringConfiguration';

/** Bodies near the valid shape: each field valid, missing, or hostile, so validation is exercised field by field. */
const nearValidBody = fc
  .record(
    {
      inventoryMonitoringConfigurationType: fc.oneof(
        fc.constant('CERTIFICATE_EXPIRATION'),
        fc.constant('certificate_expiration'),
        weirdString(),
        hostileJson,
      ),
      enabled: fc.oneof(fc.boolean(), hostileJson),
      thresholds: fc.oneof(
        fc.uniqueArray(fc.integer({ min: 1, max: 3650 }), { maxLength: 3 }),
        fc.array(hostileNumber, { maxLength: 5 }),
        hostileJson,
      ),
      applicationIds: fc.oneof(
        fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), { maxLength: 5 }),
        fc.array(weirdString(), { maxLength: 5 }),
        hostileJson,
      ),
      includeUnassignedCertificates: fc.oneof(fc.boolean(), hostileJson),
      rules: fc.oneof(fc.constant(undefined), fc.constant([]), hostileJson),
    },
    { requiredKeys: [] },
  )
  .chain((inner) => fc.oneof(fc.constant({ [P]: inner }), fc.record({ [P]: fc.constant(inner), extra: hostileJson })));

/** What gets sent: a JSON value, or raw text (deep nesting, number literals JSON.stringify cannot write, garbage). */
type Body = { json: unknown } | { raw: string } | { deep: Deep; field: string };
const body: fc.Arbitrary<Body> = fc.oneof(
  { weight: 4, arbitrary: nearValidBody.map((json) => ({ json })) },
  { weight: 2, arbitrary: hostileJson.map((json) => ({ json })) },
  { weight: 1, arbitrary: hostileJson.map((json) => ({ json: { [P]: json } })) },
  {
    // deep values where error messages quote the value and where the body's shape is checked
    weight: 2,
    arbitrary: fc.record({
      deep,
      field: fc.constantFrom('(body)', '', 'inventoryMonitoringConfigurationType', 'thresholds', 'applicationIds', 'enabled'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('thresholds', 'enabled', 'inventoryMonitoringConfigurationType'), hostileNumberLiteral)
      .map(([f, n]) => ({
        raw: `{"${P}":{"inventoryMonitoringConfigurationType":"CERTIFICATE_EXPIRATION","enabled":true,"includeUnassignedCertificates":true,"applicationIds":[],"thresholds":[7],"${f}":${f === 'thresholds' ? `[${n}]` : n}}}`,
      })),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(weirdString(40), fc.constantFrom('', '{', '{"a":1,}', 'null', '0', 'false', '""', '[]', '\ufeff{}'))
      .map((raw) => ({ raw })),
  },
);

function rawOf(b: Body): string {
  if ('raw' in b) return b.raw;
  if ('json' in b) return JSON.stringify(b.json) ?? 'null';
  const t = deepText(b.deep);
  if (b.field === '(body)') return t;
  if (b.field === '') return `{"${P}":${t}}`;
  return `{"${P}":{"${b.field}":${b.field === 'thresholds' || b.field === 'applicationIds' ? `[${t}]` : t}}}`;
}

const fixtures: Partial<Record<StoreKind, Fixture>> = {};

describe.each<StoreKind>(['sqlite', 'postgres'])('fuzz: REST monitoring configuration PUT (%s)', (kind) => {
  beforeAll(async () => {
    fixtures[kind] = await startFixture(kind, async (svc) => {
      for (let i = 0; i < 20; i++) await call(svc, MONITORING_CONFIG_PATH, { method: 'PUT', json: { x: i } });
    });
  });
  afterAll(async () => {
    await fixtures[kind]?.svc.close();
  });

  it(
    'answers every body without 5xx, in time; a rejected PUT changes nothing; an accepted one is what GET returns',
    { timeout: 180_000 },
    async () => {
      const f = fixtures[kind]!;
      await check(fuzzParams(kind === 'sqlite' ? 7001 : 7002, kind === 'sqlite' ? 100 : 40), body, async (b) => {
        const before = await tenantState(f.svc, KEY_A);
        const r = await call(f.svc, MONITORING_CONFIG_PATH, { method: 'PUT', raw: rawOf(b) });
        expectSane(r, 'PUT');
        const after = await tenantState(f.svc, KEY_A);
        if (r.status === 200) {
          // accepted: GET shows exactly what PUT answered, and nothing else of the tenant changed
          expect(after.monitoring).toEqual(r.json);
          expect({ ...after, monitoring: null }).toEqual({ ...before, monitoring: null });
        } else {
          expect(r.status, r.text.slice(0, 300)).toBeGreaterThanOrEqual(400);
          expect(after, `rejected PUT (${r.status}) changed the tenant's state`).toEqual(before);
          // errors say what is wrong and where, and never echo huge or deep input back
          expect(r.bytes, `error answer of ${r.bytes} bytes`).toBeLessThanOrEqual(64 * 1024);
        }
        await expectBUnchanged(f, 'PUT by A');
      });
    },
  );

  it('heap is back to its baseline after the run', async () => {
    await expectHeapBack(fixtures[kind]!);
  });
});
