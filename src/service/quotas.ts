/**
 * Per-company quotas (bounded state). A create first counts the company's records in the same
 * transaction (store.countForQuota serializes concurrent creates of one company on PostgreSQL; SQLite
 * transactions are serialized anyway), so concurrent creates never overshoot.
 *
 * Resources to come (silences, templates) add a `max…PerCompany` here, a count kind in the store and the same
 * `requireQuota` call inside their create transaction.
 */
import type { QuotaKind, QuotaOps } from '../store/types.js';
import { ServiceError } from '../model/errors.js';

export interface Quotas {
  maxRoutersPerCompany: number;
  maxIntegrationsPerCompany: number;
  /** Inventory: clusters reporting, and certificate rows over all of them. */
  maxClustersPerCompany: number;
  maxCertificatesPerCompany: number;
  /** Notification templates. */
  maxTemplatesPerCompany: number;
  /** Silences: active and pending ones; ended ones are deleted, oldest first, to make room. */
  maxSilencesPerCompany: number;
}

export const DEFAULT_QUOTAS: Readonly<Quotas> = {
  maxRoutersPerCompany: 1000,
  maxIntegrationsPerCompany: 200,
  maxClustersPerCompany: 1000,
  maxCertificatesPerCompany: 2_000_000,
  maxTemplatesPerCompany: 200,
  maxSilencesPerCompany: 1000,
};

const LIMIT_OF: Record<QuotaKind, { key: keyof Quotas; what: string }> = {
  routers: { key: 'maxRoutersPerCompany', what: 'routers' },
  integrations: { key: 'maxIntegrationsPerCompany', what: 'integrations' },
  clusters: { key: 'maxClustersPerCompany', what: 'clusters' },
  templates: { key: 'maxTemplatesPerCompany', what: 'templates' },
  silences: { key: 'maxSilencesPerCompany', what: 'silences' },
};

/** Pure: the error for a company holding `count` records of a kind whose limit is `limit`, if one more is refused. */
function quotaError(kind: QuotaKind, count: number, limit: number): ServiceError | undefined {
  if (count < limit) return undefined;
  const { what, key } = LIMIT_OF[kind];
  return new ServiceError(
    'QUOTA_EXCEEDED',
    `quota exceeded: a company may have at most ${limit} ${what} (${key} in --limits-file) and this one has ${count}; delete some first`,
    undefined,
    { quota: key, limit, count },
  );
}

/** The limit of a kind for these quotas. */
export function quotaLimit(kind: QuotaKind, quotas: Partial<Quotas> | undefined): number {
  return quotas?.[LIMIT_OF[kind].key] ?? DEFAULT_QUOTAS[LIMIT_OF[kind].key];
}

/** Inside the create's transaction: throws QUOTA_EXCEEDED when the company already holds its limit. */
export async function requireQuota(tx: QuotaOps, companyId: string, kind: QuotaKind, quotas: Partial<Quotas> | undefined): Promise<void> {
  const limit = quotaLimit(kind, quotas);
  const err = quotaError(kind, await tx.countForQuota(kind, companyId), limit);
  if (err) throw err;
}
