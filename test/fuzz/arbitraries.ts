/**
 * fast-check arbitraries of hostile input: weird strings, arbitrary and deeply nested JSON, huge numbers, and
 * events (valid per the spec, then mutated). Built from combinators only, so failures shrink.
 */
import fc from 'fast-check';
import { EVENT_DATA_SCHEMAS } from '../../src/events/schemas.js';
import type { EventType } from '../../src/events/families.js';

/** Characters that broke or should break things: NUL, bidi overrides, zero-width, surrogates, quotes, escapes. */
const NASTY_CHARS = [
  '\u0000',
  '\u202e',
  '\u202d',
  '\u2066',
  '\u2069',
  '\u200b',
  '\u200d',
  '\ufeff',
  '\ud800',
  '\udfff',
  '\ud83d\ude00',
  '\u00e9',
  'e\u0301',
  '\n',
  '\r',
  '\t',
  '"',
  "'",
  '\\',
  '`',
  '$',
  '{',
  '}',
  '%',
  '%ZZ',
  '\u2028',
  '\u0085',
  '\x7f',
];

/** Short strings mixing plain text, unicode and the characters above. */
export const weirdString = (maxLength = 24): fc.Arbitrary<string> =>
  fc
    .array(
      fc.oneof(
        { weight: 3, arbitrary: fc.string({ maxLength: 4 }) },
        fc.constantFrom(...NASTY_CHARS),
        fc.string({ unit: 'binary', maxLength: 3 }),
      ),
      {
        maxLength,
      },
    )
    .map((parts) => parts.join(''));

/** Numbers JSON can carry and JS mangles: huge, tiny, negative zero, beyond 2^53, 1e308. */
export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1, -1, 2 ** 53, 2 ** 53 + 1, -(2 ** 63), 2 ** 64, 1e308, -1e308, 5e-324, 1.5, 3650, 3651, 0.1),
);

/** Numbers written as JSON text that JSON.stringify cannot produce: 21 digits, exponents, 1e400 (Infinity). */
export const hostileNumberLiteral: fc.Arbitrary<string> = fc.constantFrom(
  '123456789012345678901',
  '1e400',
  '-1e400',
  '1E2',
  '1.0',
  '-0',
  '0.0000001',
  '9'.repeat(400),
  '1e-400',
);

/** Arbitrary JSON values with weird strings and numbers. */
export const hostileJson: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    hostileNumber,
    weirdString(),
    fc.array(tie('v'), { maxLength: 5 }),
    fc.dictionary(fc.oneof(weirdString(8), fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString')), tie('v'), { maxKeys: 5 }),
  ),
})).v;

/** Deep nesting, as a descriptor (compact when a counterexample is printed); `deepText` builds the JSON text. */
export interface Deep {
  depth: number;
  kind: 'array' | 'object';
  leaf: 'null' | '1' | '"x"';
}
export const deep: fc.Arbitrary<Deep> = fc.record({
  depth: fc.constantFrom(10, 100, 1_000, 5_000, 20_000),
  kind: fc.constantFrom('array' as const, 'object' as const),
  leaf: fc.constantFrom('null' as const, '1' as const, '"x"' as const),
});
/** Built as text: 5,000 levels blow JSON.stringify. */
export function deepText(d: Deep): string {
  return d.kind === 'array' ? '['.repeat(d.depth) + d.leaf + ']'.repeat(d.depth) : '{"a":'.repeat(d.depth) + d.leaf + '}'.repeat(d.depth);
}

// ---------------------------------------------------------------------------------------------------------------
// Events

export const ISSUER_TYPES = ['evt.healthstatus.certmgr-issuer.notready', 'evt.healthstatus.certmgr-issuer.active'] as const;
export const CERT_TYPES = [
  'evt.healthstatus.certmgr-certificate-resource.notready',
  'evt.healthstatus.certmgr-certificate-resource.active',
] as const;
export const EXPIRY_TYPE = 'evt.policy.expiringcertificates.failed' as const;
export const AGENT_TYPES = ['evt.healthstatus.certmgr-agent.notready', 'evt.healthstatus.certmgr-agent.active'] as const;

interface SchemaNode {
  type?: string;
  maxItems?: number;
  maxLength?: number;
  properties?: Record<string, SchemaNode>;
}

/**
 * The schema's own limits (maxItems of `DNS Names`, maxLength of `statusMessage`), so events grow up to the limit
 * the service enforces; FALLBACK where the schema has none yet (today: none).
 */
const FALLBACK_MAX_DNS_NAMES = 1000;
const FALLBACK_MAX_STRING = 400_000;
const certSchema = EVENT_DATA_SCHEMAS['evt.healthstatus.certmgr-certificate-resource.notready'] as SchemaNode;
export const MAX_DNS_NAMES: number = certSchema.properties?.SANs?.properties?.['DNS Names']?.maxItems ?? FALLBACK_MAX_DNS_NAMES;
export const MAX_STATUS_MESSAGE: number = certSchema.properties?.statusMessage?.maxLength ?? FALLBACK_MAX_STRING;

const uuidV4 = fc.uuid({ version: 4 });
const ts = fc
  .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true })
  .map((d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z'));
const offsetTs = fc
  .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true })
  .map((d) => d.toISOString().replace('Z', '+00:00'));
const dur = fc
  .tuple(fc.nat(999), fc.nat(59), fc.nat(59), fc.option(fc.nat(99), { nil: undefined }))
  .map(([h, m, s, f]) => `${h}h${m}m${s}${f === undefined ? '' : '.' + f}s`);
const name = fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,30}[a-z0-9])?$/);
const dnsName = fc.stringMatching(/^[a-z0-9-]{1,20}(\.[a-z0-9-]{1,20}){1,3}$/);

/** How big an event's lists and strings are: small, or up to (and one past) the schema limit. */
export interface EventSize {
  dnsNames: number;
  statusMessage: number;
}
export const eventSize: fc.Arbitrary<EventSize> = fc.record({
  dnsNames: fc.constantFrom(0, 1, 10, 100, Math.floor(MAX_DNS_NAMES / 2), MAX_DNS_NAMES),
  statusMessage: fc.constantFrom(10, 1_000, 50_000, MAX_STATUS_MESSAGE),
});

function dnsList(n: number, seed: string): string[] {
  return Array.from({ length: n }, (_, i) => `n${i}-${seed}.example.com`);
}

/** A valid event of `type`, with lists and strings of the given size. */
export function validEvent(
  type: EventType,
  size: EventSize = { dnsNames: 2, statusMessage: 20 },
): fc.Arbitrary<{ type: EventType; data: Record<string, unknown> }> {
  const msg = fc
    .constantFrom('x', 'Issuing certificate as Secret does not exist', 'ACME \u200e order \u00e9\u{1F512}') // cut on code points: a cut surrogate pair would be (rightly) refused
    .map((s) =>
      Array.from(s.repeat(Math.max(1, Math.ceil(size.statusMessage / s.length))))
        .slice(0, size.statusMessage)
        .join(''),
    );
  const issuer = {
    clusterId: uuidV4,
    clusterName: name,
    issuerName: name,
    namespace: name,
    resourceId: uuidV4,
    statusMessage: msg,
    statusReason: name,
    statusTransition: ts,
  };
  const cert = {
    clusterName: name,
    clusterId: uuidV4,
    certificateName: name,
    namespace: name,
    issuerName: name,
    statusMessage: msg,
    unhealthyDuration: dur,
    statusReason: name,
    statusTransition: ts,
    subject: fc.record({
      commonName: dnsName,
      countries: fc.array(fc.constantFrom('DE', 'US'), { maxLength: 2 }),
      localities: fc.array(name, { maxLength: 2 }),
      organizationalUnits: fc.array(name, { maxLength: 2 }),
      organizations: fc.array(name, { maxLength: 2 }),
      provinces: fc.array(name, { maxLength: 2 }),
    }),
    SANs: size.dnsNames === 0 ? fc.constant({}) : name.map((s) => ({ 'DNS Names': dnsList(size.dnsNames, s) })),
  };
  const agent = {
    clusterId: uuidV4,
    clusterName: name,
    lastSeenAt: ts,
    statusTransition: ts,
    statusMessage: msg,
    statusReason: fc.constantFrom('AgentSilent', 'AgentReporting'),
    agentVersion: fc.constantFrom('1.4.0', 'v2.0.0-rc.1'),
  };
  const data = ((): Record<string, fc.Arbitrary<unknown>> => {
    switch (type) {
      case 'evt.healthstatus.certmgr-issuer.notready':
        return issuer;
      case 'evt.healthstatus.certmgr-issuer.active':
        return { ...issuer, unhealthyDuration: dur };
      case 'evt.healthstatus.certmgr-certificate-resource.notready':
        return cert;
      case 'evt.healthstatus.certmgr-certificate-resource.active':
        return { ...cert, resourceId: uuidV4 };
      case 'evt.policy.expiringcertificates.failed':
        return {
          name,
          applicationIds: fc.array(name, { maxLength: 3 }),
          message: msg,
          notificationDate: offsetTs,
          threshold: fc.integer({ min: 1, max: 3650 }),
          ruleId: fc.integer({ min: 1, max: 3 }),
        };
      case 'evt.healthstatus.certmgr-agent.notready':
        return agent;
      case 'evt.healthstatus.certmgr-agent.active':
        return { ...agent, unhealthyDuration: dur };
    }
  })();
  return fc.record(data).map((d) => ({ type, data: d }));
}

// what POST /v1/events accepts: the spec's types (the hub's own agent events are refused there; the CEL fuzz covers them)
const anyEventType: fc.Arbitrary<EventType> = fc.constantFrom(...ISSUER_TYPES, ...CERT_TYPES, EXPIRY_TYPE);
export const anyValidEvent = anyEventType.chain((t) => validEvent(t));

/**
 * Malformed values: each must be rejected where the spec wants a UUID,
 * a UTC timestamp, a duration `<h>h<m>m<s>s` or an integer rule id.
 */
const MUST_REJECT: { field: 'uuid' | 'timestamp' | 'duration' | 'ruleId'; value: unknown }[] = [
  { field: 'uuid', value: 'urn:uuid:3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31' },
  { field: 'uuid', value: '00000000-0000-0000-0000-000000000000' },
  { field: 'timestamp', value: '0000-01-01T00:00:00Z' },
  { field: 'timestamp', value: '2025-03-14 09:26:53Z' },
  { field: 'timestamp', value: '2025-03-14T09:26:53' },
  { field: 'timestamp', value: '2025-03-14T09:26:53+02:00' },
  { field: 'duration', value: '123456789012345678901h0m0s' },
  { field: 'duration', value: '1h60m60s' },
  { field: 'ruleId', value: 1e308 },
];

/** Mutations of one event: a field dropped, retyped, replaced by a hostile value, an extra field, a wrong type. */
export type Mutation =
  | { kind: 'drop'; pick: number }
  | { kind: 'retype'; pick: number; value: unknown }
  | { kind: 'extra'; key: string; value: unknown }
  | { kind: 'type'; value: unknown }
  | { kind: 'strict'; index: number }
  | { kind: 'notObject'; value: unknown };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('retype' as const), pick: fc.nat(), value: hostileJson }),
  fc.record({ kind: fc.constant('extra' as const), key: weirdString(8), value: hostileJson }),
  fc.record({
    kind: fc.constant('type' as const),
    value: fc.oneof(
      weirdString(),
      hostileJson,
      fc.constantFrom(
        'evt.healthstatus.certmgr-issuer',
        'EVT.POLICY.EXPIRINGCERTIFICATES.FAILED',
        'evt.healthstatus.certmgr-issuer.notready\u0000',
      ),
    ),
  }),
  fc.record({ kind: fc.constant('strict' as const), index: fc.nat(MUST_REJECT.length - 1) }),
  fc.record({
    kind: fc.constant('notObject' as const),
    value: fc.oneof(fc.constant(null), fc.boolean(), hostileNumber, weirdString(), fc.array(fc.nat(), { maxLength: 2 })),
  }),
);

const FIELD_OF_KIND: Record<'uuid' | 'timestamp' | 'duration' | 'ruleId', Partial<Record<EventType, string>>> = {
  uuid: {
    'evt.healthstatus.certmgr-issuer.notready': 'clusterId',
    'evt.healthstatus.certmgr-issuer.active': 'resourceId',
    'evt.healthstatus.certmgr-certificate-resource.notready': 'clusterId',
    'evt.healthstatus.certmgr-certificate-resource.active': 'resourceId',
  },
  timestamp: {
    'evt.healthstatus.certmgr-issuer.notready': 'statusTransition',
    'evt.healthstatus.certmgr-issuer.active': 'statusTransition',
    'evt.healthstatus.certmgr-certificate-resource.notready': 'statusTransition',
    'evt.healthstatus.certmgr-certificate-resource.active': 'statusTransition',
  },
  duration: {
    'evt.healthstatus.certmgr-issuer.active': 'unhealthyDuration',
    'evt.healthstatus.certmgr-certificate-resource.notready': 'unhealthyDuration',
    'evt.healthstatus.certmgr-certificate-resource.active': 'unhealthyDuration',
  },
  ruleId: { 'evt.policy.expiringcertificates.failed': 'ruleId' },
};

/**
 * Applies a mutation. `mustReject` is true when the result is invalid for certain (the strict formats,
 * a missing required field, a non-object); other mutations may or may not keep the event valid.
 */
export function mutate(e: { type: EventType; data: Record<string, unknown> }, m: Mutation): { event: unknown; mustReject: boolean } {
  const keys = Object.keys(e.data);
  switch (m.kind) {
    case 'drop': {
      const k = keys[m.pick % keys.length]!;
      const { [k]: _gone, ...rest } = e.data;
      // SANs may be absent? No: it is required (it is `{}` when there are no names).
      return { event: { type: e.type, data: rest }, mustReject: true };
    }
    case 'retype': {
      const k = keys[m.pick % keys.length]!;
      return { event: { type: e.type, data: { ...e.data, [k]: m.value } }, mustReject: false };
    }
    case 'extra':
      return { event: { type: e.type, data: { ...e.data, [m.key]: m.value } }, mustReject: !(m.key in e.data) };
    case 'type':
      return { event: { type: m.value, data: e.data }, mustReject: m.value !== e.type };
    case 'strict': {
      const s = MUST_REJECT[m.index]!;
      const field = FIELD_OF_KIND[s.field][e.type];
      if (!field) return { event: e, mustReject: false };
      return { event: { type: e.type, data: { ...e.data, [field]: s.value } }, mustReject: true };
    }
    case 'notObject':
      return { event: m.value, mustReject: true };
  }
}
