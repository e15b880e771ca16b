/** Integration (notification provider) operations. Secrets are write-only: kept in `secrets`, never returned. */
import type { EgressPolicy } from '../integrations/egress.js';
import { checkExtraHeaders } from '../integrations/generic-webhook.js';
import { descriptorOf, INTEGRATIONS } from '../integrations/registry.js';
import { DEFAULT_EGRESS, type IntegrationDescriptor, type ParamField } from '../integrations/types.js';
import type { IntegrationRecord, IntegrationType } from '../store/types.js';
import type { ServiceContext } from './context.js';
import { ServiceError, badInput } from '../model/errors.js';
import { requireAllExist, requireIdList } from './ids.js';
import { requireQuota } from './quotas.js';
import { parseRateLimit } from './rate-limits.js';
import { senderProblem } from '../integrations/email-address.js';
import { requireEmail, requireEmails, requireName, requireSecret, requireSigningSecret, requireUrl } from './validate.js';

/**
 * Type-specific parameters as the GraphQL inputs carry them: `<type>Params` (the type descriptor's
 * api.paramsField) holding the fields of its `params`.
 */
export type IntegrationParamsInput = { [paramsField: string]: unknown };

/** The params input field of every type, for "does not apply" and "any params given". */
const PARAMS_FIELDS = (): string[] => Object.values(INTEGRATIONS).map((d) => d.api.paramsField);

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

/**
 * A tenant's sender address: a plain address in a sender domain the operator allows. No list (a service without
 * a runtime, which sends nothing): the address alone.
 */
function requireSender(field: string, v: unknown, allowed: readonly string[] | undefined): string {
  const from = requireEmail(field, v);
  const bad = allowed ? senderProblem(from, allowed) : null;
  if (bad) throw badInput(field, `${field} ${bad} (the operator's --smtp-sender-domains)`);
  return from;
}

/** What parameters are checked against besides their own format: the egress policy, the sender domains. */
interface ParamPolicy {
  egress: EgressPolicy;
  senderDomains?: readonly string[] | undefined;
}

/** Validates one parameter as its descriptor says; undefined for an optional one left out. */
function parseParam(f: ParamField, at: string, v: unknown, policy: ParamPolicy): string | string[] | undefined {
  if (!f.required && v == null) return undefined;
  const field = `${at}.${f.input}`;
  switch (f.kind) {
    case 'secret':
      return requireSecret(field, v, f.maxChars);
    case 'destination':
      return requireDestination(field, v, policy.egress);
    case 'signingSecret':
      return requireSigningSecret(field, v);
    case 'email':
      return requireEmail(field, v);
    case 'emails':
      return requireEmails(field, v);
    case 'sender':
      return requireSender(field, v, policy.senderDomains);
    case 'headers': {
      const r = checkExtraHeaders(v);
      if ('problem' in r) throw badInput(`${field}${r.at}`, `${field}${r.at} ${r.problem}`);
      return JSON.stringify(r.headers);
    }
  }
}

/** Validates the parameters of one integration type into non-secret config and write-only secrets. */
export function parseParams(
  type: IntegrationType,
  input: IntegrationParamsInput,
  prefix = 'input',
  egress: EgressPolicy = DEFAULT_EGRESS,
  senderDomains?: readonly string[],
): Settings {
  const d = descriptorOf(type);
  // a row of a type this version does not know (written by a newer one): refused, not a crash
  if (!d) throw badInput(prefix, `integration type ${String(type)} is not supported by this version`);
  const field = d.api.paramsField;
  for (const f of PARAMS_FIELDS()) {
    if (f !== field && input[f] != null)
      throw badInput(`${prefix}.${f}`, `${prefix}.${f} does not apply to a ${type} integration; use ${prefix}.${field}`);
  }
  const p = input[field] as Record<string, unknown> | null | undefined;
  const at = `${prefix}.${field}`;
  if (p == null) throw badInput(at, `${at} is required for a ${type} integration`);
  return parseParamsBlock(d, p, at, { egress, senderDomains });
}

/** Validates a params block `p` found at `at` (the field path the client sent it under, named by every error). */
function parseParamsBlock(d: IntegrationDescriptor, p: Record<string, unknown>, at: string, policy: ParamPolicy): Settings {
  const config: Record<string, unknown> = {};
  const secrets: Record<string, string> = {};
  for (const f of d.params) {
    const v = parseParam(f, at, p[f.input], policy);
    if (v === undefined) continue;
    if (f.into === 'secrets') secrets[f.key] = v as string;
    else config[f.key] = v;
  }
  const cross = d.checkParams?.(secrets);
  if (cross) throw badInput(`${at}.${cross.input}`, `${at}.${cross.input} ${cross.problem}`);
  return { config: { ...config, ...d.deriveConfig?.(secrets) }, secrets };
}

/**
 * The parameters of a create input as its mutation's SDL has them: under the params field, or at the top of the
 * input for a flat create input (WEBHOOK: input.url), and named there in errors.
 */
function parseCreateParams(ctx: ServiceContext, type: IntegrationType, input: CreateIntegrationInput): Settings & { at: string } {
  const d = descriptorOf(type);
  const egress = ctx.runtime?.egress ?? DEFAULT_EGRESS;
  const senderDomains = ctx.runtime?.emailSenderDomains;
  if (d?.api.flatCreateInput) return { ...parseParamsBlock(d, input, 'input', { egress, senderDomains }), at: 'input' };
  return { ...parseParams(type, input, 'input', egress, senderDomains), at: `input.${INTEGRATIONS[type].api.paramsField}` };
}

/**
 * Refuses an integration type this process cannot deliver at all (EMAIL without --smtp-url): better an error
 * now, on create or test, than a provider that looks Ready while every notification is dead-lettered.
 * No runtime (config-only service): nothing to check.
 */
export function requireDeliverable(ctx: ServiceContext, type: IntegrationType, field: string): void {
  const why = ctx.runtime?.notifiers.of(type).unavailable?.();
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

/** A create mutation's input as the client sent it (a flat one carries its params' fields at the top). */
export interface CreateIntegrationInput extends IntegrationParamsInput {
  name?: unknown;
  enabled?: unknown;
  managedBy?: unknown;
  rateLimit?: unknown;
}

export async function createIntegration(
  ctx: ServiceContext,
  type: IntegrationType,
  input: CreateIntegrationInput,
): Promise<IntegrationRecord> {
  const name = requireName('input.name', input.name);
  if (input.enabled != null && typeof input.enabled !== 'boolean') throw badInput('input.enabled', 'input.enabled must be a boolean');
  const { config, secrets, at } = parseCreateParams(ctx, type, input);
  requireDeliverable(ctx, type, at);
  const now = ctx.now();
  const enabled = input.enabled ?? true;
  const managedBy = input.managedBy == null ? null : requireName('input.managedBy', input.managedBy, 512);
  const rateLimit = parseRateLimit('input.rateLimit', input.rateLimit, ctx.runtime?.maxIntegrationRate) ?? null;
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
      rateLimit,
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
  /** null: back to the type's default; left out: unchanged */
  rateLimit?: unknown;
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
    if (input.managedBy !== undefined)
      patch.managedBy = input.managedBy === null || input.managedBy === '' ? null : requireName('input.managedBy', input.managedBy, 512);
    const rateLimit = parseRateLimit('input.rateLimit', input.rateLimit, ctx.runtime?.maxIntegrationRate);
    if (rateLimit !== undefined) patch.rateLimit = rateLimit;
    const anyParams = PARAMS_FIELDS().some((f) => input[f] != null);
    if (anyParams) {
      const parsed = parseParams(cur.type, input, 'input', ctx.runtime?.egress, ctx.runtime?.emailSenderDomains);
      const d = INTEGRATIONS[cur.type]; // known: parseParams refused any other
      if (d.updateSecrets) parsed.secrets = d.updateSecrets(cur.secrets, parsed.secrets, ctx.now());
      Object.assign(patch, parsed);
      requireDeliverable(ctx, cur.type, `input.${d.api.paramsField}`);
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
