/** Integration (notification provider) operations. Secrets are write-only: kept in `secrets`, never returned. */
import type { EgressPolicy } from '../integrations/egress.js';
import { DEFAULT_EGRESS } from '../integrations/types.js';
import { rotateSigningSecret } from '../integrations/webhook.js';
import type { IntegrationRecord, IntegrationType } from '../store/types.js';
import type { ServiceContext } from './context.js';
import { ServiceError, badInput } from './errors.js';
import { requireAllExist, requireIdList } from './ids.js';
import { requireQuota } from './quotas.js';
import { requireEmail, requireEmails, requireName, requireSecret, requireSigningSecret, requireUrl } from './validate.js';

/** Type-specific parameters as the GraphQL inputs carry them. */
export interface IntegrationParamsInput {
  incidentMgmtParams?: { IntegrationKey?: unknown } | null;
  webhookParams?: { url?: unknown; signingSecret?: unknown } | null;
  emailParams?: { to?: unknown; from?: unknown } | null;
  slackParams?: { webhookUrl?: unknown } | null;
  teamsParams?: { webhookUrl?: unknown } | null;
}

const PARAMS_FIELD: Record<IntegrationType, keyof IntegrationParamsInput> = {
  INCIDENT_MGMT: 'incidentMgmtParams',
  WEBHOOK: 'webhookParams',
  EMAIL: 'emailParams',
  SLACK: 'slackParams',
  TEAMS: 'teamsParams',
};

interface Settings {
  config: Record<string, unknown>;
  secrets: Record<string, string>;
}

/**
 * A tenant's destination URL: http(s), then the egress policy's early check (no user:pass@, a port in
 * 1-65535, no denied literal address or metadata name). Connect time checks resolved addresses again.
 */
function requireDestination(field: string, v: unknown, egress: EgressPolicy): string {
  const url = requireUrl(field, v);
  const bad = egress.checkUrl(url);
  if (bad) throw badInput(field, `${field} ${bad}`);
  return url;
}

/** Validates the parameters of one integration type into non-secret config and write-only secrets. */
export function parseParams(type: IntegrationType, input: IntegrationParamsInput, prefix = 'input', egress: EgressPolicy = DEFAULT_EGRESS): Settings {
  const field = PARAMS_FIELD[type];
  for (const f of Object.values(PARAMS_FIELD)) {
    if (f !== field && input[f] != null) throw badInput(`${prefix}.${f}`, `${prefix}.${f} does not apply to a ${type} integration; use ${prefix}.${field}`);
  }
  const p = input[field] as Record<string, unknown> | null | undefined;
  const at = `${prefix}.${field}`;
  if (p == null) throw badInput(at, `${at} is required for a ${type} integration`);
  switch (type) {
    case 'INCIDENT_MGMT':
      return { config: {}, secrets: { integrationKey: requireSecret(`${at}.IntegrationKey`, p.IntegrationKey, 256) } };
    case 'WEBHOOK': {
      const secrets: Record<string, string> = { url: requireDestination(`${at}.url`, p.url, egress) };
      if (p.signingSecret != null) secrets.signingSecret = requireSigningSecret(`${at}.signingSecret`, p.signingSecret);
      return { config: { signed: secrets.signingSecret !== undefined }, secrets };
    }
    case 'EMAIL': {
      const config: Record<string, unknown> = { to: requireEmails(`${at}.to`, p.to) };
      if (p.from != null) config.from = requireEmail(`${at}.from`, p.from);
      return { config, secrets: {} };
    }
    case 'SLACK':
    case 'TEAMS':
      return { config: {}, secrets: { webhookUrl: requireDestination(`${at}.webhookUrl`, p.webhookUrl, egress) } };
  }
}

/**
 * Refuses an integration type this process cannot deliver at all (EMAIL without --smtp-url): better an error
 * now, on create or test, than a provider that looks Ready while every notification is dead-lettered.
 * No runtime (config-only service): nothing to check.
 */
export function requireDeliverable(ctx: ServiceContext, type: IntegrationType, field: string): void {
  const why = ctx.runtime?.notifierFor(type).unavailable?.();
  if (!why) return;
  throw new ServiceError(
    'SMTP_NOT_CONFIGURED',
    `${field}: this service has no SMTP server configured, so no ${type} notification could be delivered (${why}); start the service with --smtp-url (CERTMGR_NOTIFY_SMTP_URL)`,
    field,
  );
}

export async function listIntegrations(ctx: ServiceContext): Promise<IntegrationRecord[]> {
  return ctx.store.listIntegrations(ctx.companyId);
}

export async function getIntegration(ctx: ServiceContext, id: string): Promise<IntegrationRecord> {
  const rec = await ctx.store.getIntegration(ctx.companyId, id);
  if (!rec) throw new ServiceError('NOT_FOUND', `integration ${id} not found`, 'id');
  return rec;
}

export interface CreateIntegrationInput extends IntegrationParamsInput {
  name?: unknown;
  enabled?: unknown;
  managedBy?: unknown;
}

export async function createIntegration(ctx: ServiceContext, type: IntegrationType, input: CreateIntegrationInput): Promise<IntegrationRecord> {
  const name = requireName('input.name', input.name);
  if (input.enabled != null && typeof input.enabled !== 'boolean') throw badInput('input.enabled', 'input.enabled must be a boolean');
  const { config, secrets } = parseParams(type, input, 'input', ctx.runtime?.egress);
  requireDeliverable(ctx, type, `input.${PARAMS_FIELD[type]}`);
  const now = ctx.now();
  const enabled = input.enabled ?? true;
  const managedBy = input.managedBy == null ? null : requireName('input.managedBy', input.managedBy, 512);
  const rec = await ctx.store.transaction(async (tx) => {
    await requireQuota(tx, ctx.companyId, 'integrations', ctx.quotas);
    return tx.createIntegration({
      id: ctx.newId(),
      companyId: ctx.companyId,
      name,
      type,
      enabled,
      config,
      secrets,
      managedBy,
      createdAt: now,
      updatedAt: now,
    });
  });
  ctx.onChange?.('integrations', ctx.companyId);
  return rec;
}

export interface UpdateIntegrationInput extends IntegrationParamsInput {
  name?: unknown;
  enabled?: unknown;
  managedBy?: unknown;
}

export async function updateIntegration(ctx: ServiceContext, id: string, input: UpdateIntegrationInput): Promise<IntegrationRecord> {
  const rec = await ctx.store.transaction(async (tx) => {
    const cur = await tx.getIntegration(ctx.companyId, id);
    if (!cur) throw new ServiceError('NOT_FOUND', `integration ${id} not found`, 'id');
    const patch: Parameters<typeof tx.updateIntegration>[2] = {};
    if (input.name != null) patch.name = requireName('input.name', input.name);
    if (input.enabled != null) {
      if (typeof input.enabled !== 'boolean') throw badInput('input.enabled', 'input.enabled must be a boolean');
      patch.enabled = input.enabled;
    }
    if (input.managedBy !== undefined) patch.managedBy = input.managedBy === null || input.managedBy === '' ? null : requireName('input.managedBy', input.managedBy, 512);
    const anyParams = Object.values(PARAMS_FIELD).some((f) => input[f] != null);
    if (anyParams) {
      const parsed = parseParams(cur.type, input, 'input', ctx.runtime?.egress);
      // a new signing secret: the old one keeps signing too for the overlap (receivers rotate without loss)
      if (cur.type === 'WEBHOOK') parsed.secrets = rotateSigningSecret(cur.secrets, parsed.secrets, ctx.now());
      Object.assign(patch, parsed);
      requireDeliverable(ctx, cur.type, `input.${PARAMS_FIELD[cur.type]}`);
    }
    const next = await tx.updateIntegration(ctx.companyId, id, patch, ctx.now());
    if (!next) throw new ServiceError('NOT_FOUND', `integration ${id} not found`, 'id');
    return next;
  });
  ctx.onChange?.('integrations', ctx.companyId);
  return rec;
}

/**
 * Deletes integrations; refuses (changing nothing) when a router still uses one, and names those routers.
 * The ids are deduplicated and capped (MAX_IDS_PER_CALL) and checked with one query.
 */
export async function deleteIntegrations(ctx: ServiceContext, ids: readonly unknown[]): Promise<string[]> {
  const wanted = requireIdList('ids', ids);
  const deleted = await ctx.store.transaction(async (tx) => {
    await requireAllExist(tx, 'integrations', ctx.companyId, wanted);
    const users = await tx.listRoutersByIntegration(ctx.companyId, wanted);
    if (users.length) {
      const list = users.map((r) => `${r.id} (${r.name}) uses ${r.integrationId}`).join(', ');
      throw new ServiceError('CONFLICT', `integration(s) still used by routers: ${list}; delete or re-point those routers first`, 'ids', {
        routers: users.map((r) => ({ id: r.id, name: r.name, integrationId: r.integrationId })),
      });
    }
    return tx.deleteIntegrations(ctx.companyId, wanted);
  });
  ctx.onChange?.('integrations', ctx.companyId);
  return deleted;
}
