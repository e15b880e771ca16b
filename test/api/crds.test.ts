/** One schema per kind → TS type, ajv validator, CRD YAML (drift-checked against the committed files). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { parse } from 'yaml';
import {
  KINDS,
  MonitoringConfigKind,
  NotificationProviderKind,
  NotificationRouterKind,
  NotificationSilenceKind,
  validateMonitoringSpec,
  validateProviderSpec,
  validateRouterSpec,
  type MonitoringConfigSpec,
  type NotificationProviderSpec,
  type NotificationRouterSpec,
  type NotificationRouterStatus,
  type Schema,
} from '../../src/api/index.js';
import { buildCrd, crdFileName } from '../../src/api/crd.js';
import { CRD_DIRS, REPO_ROOT, crdDrift, generatedCrdFiles } from '../../src/tools/gen-crds.js';

describe('CRD YAML', () => {
  it('committed crds/ and the chart copy match the schemas (run `node --import tsx src/tools/gen-crds.ts` after a change)', () => {
    expect(crdDrift()).toEqual([]);
  });

  it('one file per kind in each directory, named <plural>.<group>.yaml', () => {
    expect([...generatedCrdFiles().keys()].sort()).toEqual(
      CRD_DIRS.flatMap((d) => KINDS.map((k) => `${d}/${k.plural}.notify.certmgr.io.yaml`)).sort(),
    );
  });

  it.each(KINDS.map((k) => [k.kind, k] as const))('%s: names, scope, status subresource, printer columns', (_n, k) => {
    const crd = parse(readFileSync(join(REPO_ROOT, 'crds', crdFileName(k)), 'utf8'));
    expect(crd.spec.group).toBe('notify.certmgr.io');
    expect(crd.spec.names).toMatchObject({ kind: k.kind, plural: k.plural, shortNames: k.shortNames, categories: ['certmgr-notify'] });
    const v = crd.spec.versions[0];
    expect(v).toMatchObject({ name: 'v1alpha1', served: true, storage: true, subresources: { status: {} } });
    const cols = v.additionalPrinterColumns.map((c: { name: string }) => c.name);
    expect(cols[0]).toBe('Ready');
    expect(cols.at(-1)).toBe('Age');
    expect(crd.spec.scope).toBe(k === MonitoringConfigKind ? 'Cluster' : 'Namespaced');
  });

  it('printer columns: Ready, event type, provider, enabled, age', () => {
    const cols = (k: typeof NotificationRouterKind) => k.printerColumns.filter((c) => !c.priority).map((c) => c.name);
    expect(cols(NotificationRouterKind)).toEqual(['Ready', 'Event Type', 'Provider', 'Enabled', 'Age']);
    expect(cols(NotificationProviderKind)).toEqual(['Ready', 'Type', 'Enabled', 'Age']);
    expect(cols(MonitoringConfigKind)).toEqual(['Ready', 'Enabled', 'Thresholds', 'Age']);
    expect(cols(NotificationSilenceKind)).toEqual(['Ready', 'State', 'Starts', 'Ends', 'Age']);
  });

  it('schemas are structural: no $ref/definitions, no type arrays, every property typed, junctors untyped', () => {
    const problems: string[] = [];
    const walk = (s: Schema, path: string, inJunctor: boolean): void => {
      const o = s as Record<string, unknown>;
      for (const bad of ['$ref', '$schema', 'definitions', '$defs']) if (bad in o) problems.push(`${path}: ${bad}`);
      if (Array.isArray(o['type'])) problems.push(`${path}: type array`);
      if (inJunctor && ('type' in o || 'default' in o || 'description' in o || 'nullable' in o))
        problems.push(`${path}: type/default/description in a junctor`);
      if (!inJunctor && !('type' in o) && !o['x-kubernetes-preserve-unknown-fields']) problems.push(`${path}: no type`);
      for (const [k, p] of Object.entries(s.properties ?? {})) walk(p, `${path}.${k}`, inJunctor);
      if (s.items) walk(s.items, `${path}[]`, inJunctor);
      for (const j of ['oneOf', 'anyOf', 'allOf'] as const) (s[j] ?? []).forEach((b, i) => walk(b, `${path}.${j}[${i}]`, true));
    };
    for (const k of KINDS) {
      const crd = buildCrd(k) as unknown as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } };
      walk(crd.spec.versions[0]!.schema.openAPIV3Schema, k.kind, false);
    }
    expect(problems).toEqual([]);
  });
});

describe('validators (the same schemas, ajv)', () => {
  const ref = { name: 's', key: 'k' };
  it.each<[string, unknown, string[] | 'ok']>([
    ['incident management', { type: 'IncidentManagement', incidentManagement: { integrationKeySecretRef: ref } }, 'ok'],
    ['webhook with signing secret', { type: 'Webhook', webhook: { urlSecretRef: ref, signingSecretRef: ref } }, 'ok'],
    ['email', { type: 'Email', email: { to: ['a@example.com'] } }, 'ok'],
    ['opsgenie', { type: 'Opsgenie', opsgenie: { apiKeySecretRef: ref } }, 'ok'],
    ['google chat', { type: 'GoogleChat', googleChat: { webhookUrlSecretRef: ref } }, 'ok'],
    ['discord', { type: 'Discord', discord: { webhookUrlSecretRef: ref } }, 'ok'],
    [
      'generic webhook with signing secret and headers',
      { type: 'GenericWebhook', genericWebhook: { urlSecretRef: ref, signingSecretRef: ref, headersSecretRef: ref } },
      'ok',
    ],
    [
      'alertmanager with basic auth',
      { type: 'Alertmanager', alertmanager: { urlSecretRef: ref, usernameSecretRef: ref, passwordSecretRef: ref } },
      'ok',
    ],
    [
      'alertmanager without a URL ref',
      { type: 'Alertmanager', alertmanager: {} },
      ["spec.alertmanager: must have required property 'urlSecretRef'"],
    ],
    ['opsgenie without its settings', { type: 'Opsgenie' }, ["spec: must have required property 'opsgenie'"]],
    ['opsgenie without a key ref', { type: 'Opsgenie', opsgenie: {} }, ["spec.opsgenie: must have required property 'apiKeySecretRef'"]],
    [
      'generic webhook without a URL ref',
      { type: 'GenericWebhook', genericWebhook: { signingSecretRef: ref } },
      ["spec.genericWebhook: must have required property 'urlSecretRef'"],
    ],
    [
      'unknown type',
      { type: 'Pager' },
      [
        'spec.type: must be one of IncidentManagement, Webhook, Email, Slack, Teams, Opsgenie, GoogleChat, Discord, GenericWebhook, Alertmanager',
      ],
    ],
    ['type without its settings', { type: 'Slack' }, ["spec: must have required property 'slack'"]],
    [
      'secretRef without key',
      { type: 'Teams', teams: { webhookUrlSecretRef: { name: 's' } } },
      ["spec.teams.webhookUrlSecretRef: must have required property 'key'"],
    ],
    ['no type', {}, ["spec: must have required property 'type'"]],
    [
      'email: too many recipients',
      { type: 'Email', email: { to: Array.from({ length: 51 }, (_, i) => `u${i}@x.io`) } },
      ['spec.email.to: must NOT have more than 50 items'],
    ],
  ])('provider: %s', (_n, spec, want) => {
    const v = validateProviderSpec(spec);
    if (want === 'ok') expect(v).toMatchObject({ ok: true });
    else {
      expect(v.ok).toBe(false);
      for (const w of want) expect(v.ok ? [] : v.errors).toContain(w);
    }
  });

  it.each<[string, unknown, string[] | 'ok']>([
    ['minimal', { eventTypeId: 'cert-expiry-ext-notification-config', providerRef: { name: 'p' } }, 'ok'],
    [
      'unknown event type',
      { eventTypeId: 'nope', providerRef: { name: 'p' } },
      [
        'spec.eventTypeId: must be one of certmgr-issuer-health-notification-config, certmgr-cert-resource-health-notification-config, cert-expiry-ext-notification-config, certmgr-agent-health-notification-config',
      ],
    ],
    ['no providerRef', { eventTypeId: 'cert-expiry-ext-notification-config' }, ["spec: must have required property 'providerRef'"]],
    [
      'filter too long',
      { eventTypeId: 'cert-expiry-ext-notification-config', providerRef: { name: 'p' }, filter: 'x'.repeat(2001) },
      ['spec.filter: must NOT have more than 2000 characters'],
    ],
  ])('router: %s', (_n, spec, want) => {
    const v = validateRouterSpec(spec);
    if (want === 'ok') expect(v).toMatchObject({ ok: true, value: { enabled: true } });
    else expect(v.ok ? [] : v.errors).toEqual(want);
  });

  it.each<[string, unknown, string[] | 'ok']>([
    ['empty → defaults', {}, 'ok'],
    ['4 thresholds', { thresholds: [1, 2, 3, 4] }, ['spec.thresholds: must NOT have more than 3 items']],
    ['duplicate thresholds (list-type set)', { thresholds: [7, 7] }, ['spec.thresholds: must not contain duplicate items (list-type set)']],
    ['threshold out of range', { thresholds: [0, 4000] }, ['spec.thresholds[0]: must be >= 1', 'spec.thresholds[1]: must be <= 3650']],
  ])('monitoring config: %s', (_n, spec, want) => {
    const v = validateMonitoringSpec(spec);
    if (want === 'ok')
      expect(v).toEqual({
        ok: true,
        value: { enabled: true, thresholds: [30, 14, 7], applicationIds: [], includeUnassignedCertificates: true },
      });
    else expect(v.ok ? [] : v.errors).toEqual(want);
  });

  it('does not mutate its input', () => {
    const spec = { eventTypeId: 'cert-expiry-ext-notification-config', providerRef: { name: 'p' } };
    validateRouterSpec(spec);
    expect(spec).toEqual({ eventTypeId: 'cert-expiry-ext-notification-config', providerRef: { name: 'p' } });
  });
});

describe('types derived from the schemas', () => {
  it('have the fields, literal unions and defaults of the schema', () => {
    expectTypeOf<NotificationRouterSpec['eventTypeId']>().toEqualTypeOf<
      | 'certmgr-issuer-health-notification-config'
      | 'certmgr-cert-resource-health-notification-config'
      | 'cert-expiry-ext-notification-config'
      | 'certmgr-agent-health-notification-config'
    >();
    expectTypeOf<NotificationRouterSpec['enabled']>().toEqualTypeOf<boolean>(); // defaulted → present
    expectTypeOf<NotificationRouterSpec['filter']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<NotificationRouterSpec['providerRef']>().toEqualTypeOf<{ name: string }>();
    expectTypeOf<NotificationProviderSpec['type']>().toEqualTypeOf<
      | 'IncidentManagement'
      | 'Webhook'
      | 'Email'
      | 'Slack'
      | 'Teams'
      | 'Opsgenie'
      | 'GoogleChat'
      | 'Discord'
      | 'GenericWebhook'
      | 'Alertmanager'
    >();
    expectTypeOf<MonitoringConfigSpec['thresholds']>().toEqualTypeOf<number[]>();
    expectTypeOf<NonNullable<NotificationRouterStatus['conditions']>[number]['status']>().toEqualTypeOf<'True' | 'False' | 'Unknown'>();
  });
});
