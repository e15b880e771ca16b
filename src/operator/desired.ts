/**
 * Pure decisions of the reconcilers: spec → desired service record, desired vs actual → what to change,
 * which record is ours. No I/O; table-tested in test/operator/decisions.test.ts.
 */
import type { MonitoringConfigSpec } from '../api/monitoringconfig.js';
import { PROVIDER_SETTINGS_FIELD, type NotificationProviderSpec, type ProviderType } from '../api/notificationprovider.js';
import type { NotificationRouterSpec } from '../api/notificationrouter.js';
import { ROUTER_POLICY_DEFAULTS, TEMPLATE_PART_KEYS } from '../model/records.js';
import type { NotificationTemplateSpec } from '../api/notificationtemplate.js';
import { formatInterval, parseInterval } from '../validation/interval.js';
import type { SecretKeyRef } from '../api/meta.js';
import type { MonitoringConfigView } from '../client/monitoring.js';
import type {
  CreateIntegrationInput,
  IntegrationParams,
  IntegrationView,
  RateLimitInput,
  RouterInput,
  RouterPolicyView,
  RouterView,
  TemplateInput,
  TemplatePartsView,
  TemplateView,
  UpdateIntegrationInput,
} from '../client/service-api.js';
import type { MonitoringConfigInput } from '../model/monitoring.js';
import { INTEGRATION_META, INTEGRATION_TYPES, type IntegrationType } from '../model/integration-types.js';

export interface ObjectId {
  kind: string;
  namespace?: string;
  name: string;
}

/**
 * `k8s:<kind>/<namespace>/<name>`: marks (and finds again) the service records the operator owns. Several
 * clusters reconciling into one service (same company) must each set a cluster name: `…@<cluster>`, or they
 * would adopt (and clean up) each other's records.
 */
export function managedByKey(o: ObjectId, cluster?: string): string {
  return `k8s:${o.kind}/${o.namespace ?? ''}/${o.name}${cluster ? `@${cluster}` : ''}`;
}

/**
 * Name of a record in the service: spec.displayName (the user's words, kept verbatim), else
 * [<cluster>/]<namespace>/<name>: with a cluster name set, records of several clusters in one service say
 * which cluster they came from. Records are found by managedBy, never by name, so a rename updates in place.
 */
export function recordName(o: ObjectId, displayName: string | undefined, cluster?: string): string {
  const d = displayName?.trim();
  if (d) return d;
  const local = o.namespace ? `${o.namespace}/${o.name}` : o.name;
  return cluster ? `${cluster}/${local}` : local;
}

// ---------------------------------------------------------------------------------------------------------
// providers

/** NotificationProvider spec.type → integration type, from each type's providerType (model/integration-types.ts). */
export const INTEGRATION_TYPE = Object.fromEntries(INTEGRATION_TYPES.map((t) => [INTEGRATION_META[t].providerType, t])) as Record<
  ProviderType,
  IntegrationType
>;

/** Role of each secret a provider type reads. */
export type SecretRole =
  'integrationKey' | 'url' | 'signingSecret' | 'webhookUrl' | 'apiKey' | 'headers' | 'bearerToken' | 'username' | 'password';

export interface SecretUse {
  role: SecretRole;
  ref: SecretKeyRef;
  /** spec path, for messages */
  field: string;
}

/** The Secrets (same namespace) a provider spec reads. */
export function secretRefsOf(spec: NotificationProviderSpec): SecretUse[] {
  switch (spec.type) {
    case 'IncidentManagement':
      return spec.incidentManagement
        ? [
            {
              role: 'integrationKey',
              ref: spec.incidentManagement.integrationKeySecretRef,
              field: 'spec.incidentManagement.integrationKeySecretRef',
            },
          ]
        : [];
    case 'Webhook': {
      if (!spec.webhook) return [];
      const out: SecretUse[] = [{ role: 'url', ref: spec.webhook.urlSecretRef, field: 'spec.webhook.urlSecretRef' }];
      if (spec.webhook.signingSecretRef)
        out.push({ role: 'signingSecret', ref: spec.webhook.signingSecretRef, field: 'spec.webhook.signingSecretRef' });
      return out;
    }
    case 'Slack':
      return spec.slack ? [{ role: 'webhookUrl', ref: spec.slack.webhookUrlSecretRef, field: 'spec.slack.webhookUrlSecretRef' }] : [];
    case 'Teams':
      return spec.teams ? [{ role: 'webhookUrl', ref: spec.teams.webhookUrlSecretRef, field: 'spec.teams.webhookUrlSecretRef' }] : [];
    case 'Opsgenie':
      return spec.opsgenie ? [{ role: 'apiKey', ref: spec.opsgenie.apiKeySecretRef, field: 'spec.opsgenie.apiKeySecretRef' }] : [];
    case 'GoogleChat':
      return spec.googleChat
        ? [{ role: 'webhookUrl', ref: spec.googleChat.webhookUrlSecretRef, field: 'spec.googleChat.webhookUrlSecretRef' }]
        : [];
    case 'Discord':
      return spec.discord ? [{ role: 'webhookUrl', ref: spec.discord.webhookUrlSecretRef, field: 'spec.discord.webhookUrlSecretRef' }] : [];
    case 'GenericWebhook': {
      const g = spec.genericWebhook;
      if (!g) return [];
      const out: SecretUse[] = [{ role: 'url', ref: g.urlSecretRef, field: 'spec.genericWebhook.urlSecretRef' }];
      if (g.signingSecretRef) out.push({ role: 'signingSecret', ref: g.signingSecretRef, field: 'spec.genericWebhook.signingSecretRef' });
      if (g.headersSecretRef) out.push({ role: 'headers', ref: g.headersSecretRef, field: 'spec.genericWebhook.headersSecretRef' });
      return out;
    }
    case 'Alertmanager': {
      const a = spec.alertmanager;
      if (!a) return [];
      const out: SecretUse[] = [{ role: 'url', ref: a.urlSecretRef, field: 'spec.alertmanager.urlSecretRef' }];
      if (a.bearerTokenSecretRef)
        out.push({ role: 'bearerToken', ref: a.bearerTokenSecretRef, field: 'spec.alertmanager.bearerTokenSecretRef' });
      if (a.usernameSecretRef) out.push({ role: 'username', ref: a.usernameSecretRef, field: 'spec.alertmanager.usernameSecretRef' });
      if (a.passwordSecretRef) out.push({ role: 'password', ref: a.passwordSecretRef, field: 'spec.alertmanager.passwordSecretRef' });
      return out;
    }
    case 'Email':
      return [];
  }
}

/** Settings block missing for the type (the CRD's oneOf catches it; this check does not rely on the installed CRD). */
export function missingSettings(spec: NotificationProviderSpec): string | undefined {
  const field = PROVIDER_SETTINGS_FIELD[spec.type];
  return spec[field] ? undefined : `spec.${field} is required for type ${spec.type}`;
}

export interface SecretObject {
  metadata?: { name?: string; uid?: string; resourceVersion?: string };
  data?: Record<string, string>;
}

export type SecretResolution = { ok: true; values: Partial<Record<SecretRole, string>>; version: string } | { ok: false; message: string };

/**
 * Reads each referenced key (base64 `data`). `version` identifies the Secrets' revisions (uid + resourceVersion,
 * never their content): when it changes, the secrets are sent to the service again.
 */
export function resolveSecrets(
  uses: readonly SecretUse[],
  namespace: string,
  get: (name: string) => SecretObject | undefined,
): SecretResolution {
  const values: Partial<Record<SecretRole, string>> = {};
  const versions = new Set<string>();
  for (const u of uses) {
    const s = get(u.ref.name);
    if (!s) return { ok: false, message: `Secret ${namespace}/${u.ref.name} (${u.field}) not found` };
    const b64 = s.data?.[u.ref.key];
    if (b64 === undefined) return { ok: false, message: `Secret ${namespace}/${u.ref.name} has no key '${u.ref.key}' (${u.field})` };
    const v = Buffer.from(b64, 'base64').toString('utf8').trim();
    if (!v) return { ok: false, message: `Secret ${namespace}/${u.ref.name} key '${u.ref.key}' is empty (${u.field})` };
    values[u.role] = v;
    versions.add(`${u.ref.name}:${s.metadata?.uid ?? ''}:${s.metadata?.resourceVersion ?? ''}`);
  }
  return { ok: true, values, version: [...versions].sort().join(',') };
}

/**
 * A headers Secret's text, one `Name: value` per line (blank lines skipped), as the API's list. A line without a
 * colon keeps its text as the name, so the service's refusal names the line (`…headers[i].name`).
 */
function headerLines(text: string): Array<{ name: string; value: string }> {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const i = l.indexOf(':');
      return i < 0 ? { name: l, value: '' } : { name: l.slice(0, i).trim(), value: l.slice(i + 1).trim() };
    });
}

/**
 * spec.rateLimit as the service stores it: burst left out is one second's worth (at least 1), as the service fills
 * it in, and unlimited (0) has burst 1, so a record in sync compares equal. null: the type's default.
 */
export function desiredRateLimit(spec: Pick<NotificationProviderSpec, 'rateLimit'>): RateLimitInput | null {
  const r = spec.rateLimit;
  if (!r) return null;
  if (r.perSecond === 0) return { perSecond: 0, burst: 1 };
  return { perSecond: r.perSecond, burst: r.burst ?? Math.max(1, Math.ceil(r.perSecond)) };
}

export interface DesiredIntegration extends CreateIntegrationInput {
  /** what the service shows back (non-secret), to detect drift */
  visible: { emailTo?: string[]; emailFrom?: string | null; webhookSigned?: boolean };
}

export function desiredIntegration(
  o: ObjectId,
  spec: NotificationProviderSpec,
  secrets: Partial<Record<SecretRole, string>>,
  cluster?: string,
): DesiredIntegration {
  const base = {
    type: INTEGRATION_TYPE[spec.type],
    name: recordName(o, spec.displayName, cluster),
    enabled: spec.enabled,
    managedBy: managedByKey(o, cluster),
    rateLimit: desiredRateLimit(spec),
  };
  const need = (r: SecretRole): string => {
    const v = secrets[r];
    if (v === undefined) throw new Error(`internal: secret ${r} not resolved`);
    return v;
  };
  let params: IntegrationParams;
  let visible: DesiredIntegration['visible'] = {};
  switch (spec.type) {
    case 'IncidentManagement':
      params = { incidentMgmtParams: { IntegrationKey: need('integrationKey') } };
      break;
    case 'Webhook':
      params = { webhookParams: { url: need('url'), signingSecret: secrets.signingSecret || undefined } };
      visible = { webhookSigned: Boolean(secrets.signingSecret) };
      break;
    case 'Email': {
      const e = spec.email!;
      params = { emailParams: { to: [...e.to], from: e.from || undefined } };
      visible = { emailTo: [...e.to], emailFrom: e.from ?? null };
      break;
    }
    case 'Slack':
      params = { slackParams: { webhookUrl: need('webhookUrl') } };
      break;
    case 'Teams':
      params = { teamsParams: { webhookUrl: need('webhookUrl') } };
      break;
    case 'Opsgenie':
      params = { opsgenieParams: { apiKey: need('apiKey') } };
      break;
    case 'GoogleChat':
      params = { googleChatParams: { webhookUrl: need('webhookUrl') } };
      break;
    case 'Discord':
      params = { discordParams: { webhookUrl: need('webhookUrl') } };
      break;
    case 'GenericWebhook':
      params = {
        genericWebhookParams: {
          url: need('url'),
          signingSecret: secrets.signingSecret || undefined,
          headers: secrets.headers ? headerLines(secrets.headers) : undefined,
        },
      };
      visible = { webhookSigned: Boolean(secrets.signingSecret) };
      break;
    case 'Alertmanager':
      params = {
        alertmanagerParams: {
          url: need('url'),
          bearerToken: secrets.bearerToken || undefined,
          username: secrets.username || undefined,
          password: secrets.password || undefined,
        },
      };
      break;
  }
  return { ...base, params, visible };
}

export interface IntegrationPlan {
  /** field names that drifted (for logs/events; never values) */
  drift: string[];
  update: UpdateIntegrationInput | undefined;
}

/**
 * What to send to bring `actual` to `desired`. Secrets cannot be read back, so they are re-sent when
 * `secretsChanged` (the Secrets' version differs from the one last applied) or visible settings drifted.
 */
export function planIntegrationUpdate(desired: DesiredIntegration, actual: IntegrationView, secretsChanged: boolean): IntegrationPlan {
  const drift: string[] = [];
  const update: UpdateIntegrationInput = {};
  if (actual.name !== desired.name) {
    drift.push('name');
    update.name = desired.name;
  }
  if (actual.enabled !== desired.enabled) {
    drift.push('enabled');
    update.enabled = desired.enabled;
  }
  if (actual.managedBy !== desired.managedBy) {
    drift.push('managedBy');
    update.managedBy = desired.managedBy;
  }
  // the integration's own rate (null: the type's default); a service that does not return it counts as the default
  const want = desired.rateLimit ?? null;
  const r = actual.rateLimit;
  const have = r && !r.typeDefault ? { perSecond: r.perSecond, burst: r.burst } : null;
  if (want?.perSecond !== have?.perSecond || want?.burst !== have?.burst) {
    drift.push('rateLimit');
    update.rateLimit = want;
  }
  let params = secretsChanged;
  if (secretsChanged) drift.push('secrets');
  const v = desired.visible;
  if (v.emailTo && JSON.stringify(actual.emailTo ?? []) !== JSON.stringify(v.emailTo)) {
    drift.push('emailTo');
    params = true;
  }
  if (v.emailFrom !== undefined && (actual.emailFrom ?? null) !== v.emailFrom) {
    drift.push('emailFrom');
    params = true;
  }
  if (v.webhookSigned !== undefined && Boolean(actual.webhookSigned) !== v.webhookSigned) {
    drift.push('webhookSigned');
    params = true;
  }
  if (params) update.params = desired.params;
  return { drift, update: drift.length ? update : undefined };
}

/**
 * Which existing record is ours: the one whose id the status remembers (even if its managedBy was changed
 * through the API), else one carrying our managedBy (adoption after a crash between create and status write).
 * A record of another type (the spec's type changed) is not reused. The rest carrying our key are stale.
 */
export function pickOwned<R extends { id: string; managedBy: string | null }>(
  records: readonly R[],
  statusId: string | undefined,
  key: string,
  usable: (r: R) => boolean = () => true,
): { current: R | undefined; stale: R[] } {
  const byStatus = statusId ? records.find((r) => r.id === statusId && usable(r)) : undefined;
  const current = byStatus ?? records.find((r) => r.managedBy === key && usable(r));
  const stale = records.filter((r) => r !== current && (r.managedBy === key || (statusId !== undefined && r.id === statusId)));
  return { current, stale };
}

// ---------------------------------------------------------------------------------------------------------
// routers

export function desiredRouter(
  o: ObjectId,
  spec: NotificationRouterSpec,
  integrationId: string,
  cluster?: string,
  templateId?: string | null,
): RouterInput {
  return {
    name: recordName(o, spec.displayName, cluster),
    eventTypeId: spec.eventTypeId,
    filter: (spec.filter ?? '').trim(),
    integrationId,
    templateId: templateId || undefined,
    enabled: spec.enabled,
    managedBy: managedByKey(o, cluster),
    policy: desiredRouterPolicy(spec),
  };
}

/** The spec's grouping and reminders, written the way the API returns them (so a plan compares equal). */
function desiredRouterPolicy(spec: NotificationRouterSpec): RouterPolicyView {
  const norm = (v: string | undefined, d: number): string => formatInterval(v === undefined ? d : (parseInterval(v) ?? d));
  return {
    groupBy: spec.groupBy ?? [],
    groupWait: norm(spec.groupWait, ROUTER_POLICY_DEFAULTS.groupWaitMs),
    groupInterval: norm(spec.groupInterval, ROUTER_POLICY_DEFAULTS.groupIntervalMs),
    repeatInterval: spec.repeatInterval ? norm(spec.repeatInterval, 0) : null,
    holdUnderIssuer: spec.holdUnderIssuer ?? ROUTER_POLICY_DEFAULTS.holdUnderIssuer,
  };
}

export interface RouterPlan {
  drift: string[];
  update: Partial<RouterInput> | undefined;
}

export function planRouterUpdate(desired: RouterInput, actual: RouterView): RouterPlan {
  const drift: string[] = [];
  const update: Partial<RouterInput> = {};
  if (actual.name !== desired.name) {
    drift.push('name');
    update.name = desired.name;
  }
  if (actual.enabled !== desired.enabled) {
    drift.push('enabled');
    update.enabled = desired.enabled;
  }
  if (actual.eventTypeId !== desired.eventTypeId) {
    drift.push('eventTypeId');
    update.eventTypeId = desired.eventTypeId;
    // the service re-validates the filter against the new family: send the one we want with it
    update.filter = desired.filter;
  }
  if ((actual.filter ?? '').trim() !== desired.filter) {
    drift.push('filter');
    update.filter = desired.filter;
  }
  if (actual.integrationId !== desired.integrationId) {
    drift.push('integrationId');
    update.integrationId = desired.integrationId;
  }
  if ((actual.templateId ?? null) !== (desired.templateId ?? null)) {
    drift.push('templateId');
    update.templateId = desired.templateId ?? null;
  }
  if (actual.managedBy !== desired.managedBy) {
    drift.push('managedBy');
    update.managedBy = desired.managedBy;
  }
  if (JSON.stringify(actual.policy) !== JSON.stringify(desired.policy)) {
    drift.push('policy');
    update.policy = desired.policy;
  }
  return { drift, update: drift.length ? update : undefined };
}

// ---------------------------------------------------------------------------------------------------------
// templates

/** The parts with every key and field, absent ones null: the shape the API returns, so a plan compares equal. */
function normalParts(parts: TemplatePartsView | NotificationTemplateSpec['parts']): TemplatePartsView {
  const src = parts as Record<string, { title?: string | null; text?: string | null; body?: string | null } | null | undefined>;
  const out: TemplatePartsView = {};
  for (const k of TEMPLATE_PART_KEYS) {
    const p = src[k];
    out[k] = p ? { title: p.title ?? null, text: p.text ?? null, body: p.body ?? null } : null;
  }
  return out;
}

export function desiredTemplate(o: ObjectId, spec: NotificationTemplateSpec, cluster?: string): TemplateInput {
  return { name: recordName(o, spec.displayName, cluster), parts: normalParts(spec.parts), managedBy: managedByKey(o, cluster) };
}

export function planTemplateUpdate(
  desired: TemplateInput,
  actual: TemplateView,
): { drift: string[]; update: Partial<TemplateInput> | undefined } {
  const drift: string[] = [];
  const update: Partial<TemplateInput> = {};
  if (actual.name !== desired.name) {
    drift.push('name');
    update.name = desired.name;
  }
  if (JSON.stringify(normalParts(actual.parts)) !== JSON.stringify(desired.parts)) {
    drift.push('parts');
    update.parts = desired.parts;
  }
  if (actual.managedBy !== desired.managedBy) {
    drift.push('managedBy');
    update.managedBy = desired.managedBy;
  }
  return { drift, update: drift.length ? update : undefined };
}

// ---------------------------------------------------------------------------------------------------------
// monitoring config

/** The service's defaults, applied when the `default` MonitoringConfig is deleted. */
export const SERVICE_DEFAULT_MONITORING: MonitoringConfigInput = {
  enabled: true,
  thresholds: [30, 14, 7],
  applicationIds: [],
  includeUnassignedCertificates: true,
};

export function desiredMonitoring(spec: MonitoringConfigSpec): MonitoringConfigInput {
  return {
    enabled: spec.enabled,
    thresholds: [...spec.thresholds],
    applicationIds: [...spec.applicationIds],
    includeUnassignedCertificates: spec.includeUnassignedCertificates,
  };
}

export function monitoringDrift(desired: MonitoringConfigInput, actual: MonitoringConfigView): string[] {
  const drift: string[] = [];
  if (actual.enabled !== desired.enabled) drift.push('enabled');
  if (JSON.stringify(actual.thresholds) !== JSON.stringify(desired.thresholds)) drift.push('thresholds');
  if (JSON.stringify(actual.applicationIds) !== JSON.stringify(desired.applicationIds)) drift.push('applicationIds');
  if (actual.includeUnassignedCertificates !== desired.includeUnassignedCertificates) drift.push('includeUnassignedCertificates');
  return drift;
}

/**
 * What the `default` MonitoringConfig does about the service's record (ownership): `me` is this CR's
 * manager key (managedByKey with the cluster). Another manager's record (another cluster's CR, or the API after
 * a PUT took it over) is neither reverted nor fought over: reported, with the drift. An unmanaged record is
 * claimed by a write even when it already matches.
 */
export type MonitoringPlan =
  { action: 'none' } | { action: 'write'; drift: string[] } | { action: 'elsewhere'; manager: string; drift: string[] };

export function planMonitoring(me: string, desired: MonitoringConfigInput, current: MonitoringConfigView): MonitoringPlan {
  const drift = monitoringDrift(desired, current);
  if (current.manager !== undefined && current.manager !== me) return { action: 'elsewhere', manager: current.manager, drift };
  return drift.length || current.manager !== me ? { action: 'write', drift } : { action: 'none' };
}

/** On deletion: reset to the service defaults (and give the record up) only when this CR is the manager of record. */
export function releaseMonitoring(me: string, current: MonitoringConfigView): boolean {
  return current.manager === me;
}
