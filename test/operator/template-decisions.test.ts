/** NotificationTemplate and templateRef: the pure mappings (desired record, update plan, watch mapping) and admission. */
import { describe, expect, it } from 'vitest';
import { validateRouterSpec, validateTemplateSpec, type NotificationTemplateSpec } from '../../src/api/index.js';
import { reviewAdmission } from '../../src/admission/index.js';
import type { TemplateView } from '../../src/client/service-api.js';
import { desiredRouter, desiredTemplate, planRouterUpdate, planTemplateUpdate } from '../../src/operator/desired.js';
import { routersUsingTemplate } from '../../src/operator/reconcilers/template.js';
import type { NotificationRouter } from '../../src/api/notificationrouter.js';

const T = { kind: 'NotificationTemplate', namespace: 'team-a', name: 'ops' };
const spec = (parts: Record<string, unknown>): NotificationTemplateSpec => {
  const v = validateTemplateSpec({ parts });
  if (!v.ok) throw new Error(v.errors.join('; '));
  return v.value;
};

describe('templates: desired record and update plan', () => {
  const desired = desiredTemplate(T, spec({ default: { title: '{{ title }}' }, SLACK: { text: 's' } }));

  it('maps the spec: every part key, absent fields null (the API shape)', () => {
    expect(desired).toEqual({
      name: 'team-a/ops',
      managedBy: 'k8s:NotificationTemplate/team-a/ops',
      parts: {
        default: { title: '{{ title }}', text: null, body: null },
        INCIDENT_MGMT: null,
        WEBHOOK: null,
        EMAIL: null,
        SLACK: { title: null, text: 's', body: null },
        TEAMS: null,
        OPSGENIE: null,
        GOOGLE_CHAT: null,
        DISCORD: null,
        GENERIC_WEBHOOK: null,
        ALERTMANAGER: null,
      },
    });
  });

  const actual = (over: Partial<TemplateView> = {}): TemplateView => ({ id: 't1', ...desired, ...over });

  it.each<[string, Partial<TemplateView>, string[]]>([
    ['in sync', {}, []],
    ['renamed through the API', { name: 'x' }, ['name']],
    ['parts changed through the API', { parts: { ...desired.parts, SLACK: { title: null, text: 'other', body: null } } }, ['parts']],
    ['managedBy taken', { managedBy: null }, ['managedBy']],
  ])('%s', (_n, over, drift) => {
    const plan = planTemplateUpdate(desired, actual(over));
    expect(plan.drift).toEqual(drift);
    if (drift.includes('parts')) expect(plan.update?.parts).toEqual(desired.parts);
  });

  it('templateRef: the router carries the template id; dropping it clears the id', () => {
    const v = validateRouterSpec({
      eventTypeId: 'certmgr-issuer-health-notification-config',
      providerRef: { name: 'p' },
      templateRef: { name: 'ops' },
    });
    if (!v.ok) throw new Error(v.errors.join('; '));
    const R = { kind: 'NotificationRouter', namespace: 'team-a', name: 'r' };
    const withT = desiredRouter(R, v.value, 'i1', undefined, 't1');
    expect(withT.templateId).toBe('t1');
    const view = { id: 'r1', generation: 'ROUTER' as const, ...withT, templateId: 't1' };
    expect(planRouterUpdate(withT, view).update).toBeUndefined();
    const without = desiredRouter(R, v.value, 'i1');
    expect(planRouterUpdate(without, view)).toEqual({ drift: ['templateId'], update: { templateId: null } });
    expect(planRouterUpdate(withT, { ...view, templateId: null }).update).toEqual({ templateId: 't1' });
  });

  it('a template maps to the routers of its namespace that reference it', () => {
    const r = (ns: string, name: string, templateRef?: string) =>
      ({ metadata: { namespace: ns, name }, spec: { templateRef: templateRef ? { name: templateRef } : undefined } }) as NotificationRouter;
    expect(
      routersUsingTemplate(
        [r('team-a', 'a', 'ops'), r('team-b', 'b', 'ops'), r('team-a', 'c'), r('team-a', 'd', 'other')],
        'team-a',
        'ops',
      ),
    ).toEqual(['team-a/a']);
  });
});

describe('admission: NotificationTemplate', () => {
  const review = (operation: string, s: unknown) =>
    reviewAdmission({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u',
        kind: { group: 'notify.certmgr.io', version: 'v1alpha1', kind: 'NotificationTemplate' },
        operation,
        name: 'ops',
        namespace: 'ns',
        object: { metadata: { name: 'ops', namespace: 'ns' }, spec: s },
      },
    }).response;

  it.each<[string, unknown, boolean, string | undefined]>([
    ['good', { parts: { default: { title: '{{ title }}' }, SLACK: { text: 'x' } } }, true, undefined],
    [
      'does not compile',
      { parts: { SLACK: { text: 'a\n {{ x | nope }}' } } },
      false,
      'spec.parts.SLACK.text: line 2, column 2: undefined filter: nope',
    ],
    [
      'include',
      { parts: { default: { title: '{% include "a" %}' } } },
      false,
      'spec.parts.default.title: line 1, column 1: tag "include" is not allowed',
    ],
    ['bidi', { parts: { EMAIL: { title: 'a\u202Eb' } } }, false, 'spec.parts.EMAIL.title contains'],
    ['no parts', {}, false, "must have required property 'parts'"],
    ['empty', { parts: {} }, false, 'spec.parts must give at least one title, text or body'],
  ])('%s', (_n, s, allowed, message) => {
    const r = review('CREATE', s);
    expect(r.allowed).toBe(allowed);
    if (message) expect(r.status?.message).toContain(message);
  });

  it('a DELETE is allowed', () => {
    expect(review('DELETE', {}).allowed).toBe(true);
  });
});
