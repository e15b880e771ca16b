/**
 * Id lists of bulk operations (deleteIntegrations, deleteNotificationRouter): deduplicated, capped, and checked
 * with one query, so a request of thousands of (repeated) ids cannot hold a store connection for long.
 */
import type { QuotaKind, QuotaOps } from '../store/types.js';
import { ServiceError, badInput } from '../model/errors.js';
import { isUuid } from './validate.js';

/** Most distinct ids one call may name. */
const MAX_IDS_PER_CALL = 100;

/** Pure: the distinct ids, in first-seen order; throws naming the field and the cap when there are too many. */
export function requireIdList(field: string, ids: readonly unknown[], max = MAX_IDS_PER_CALL): string[] {
  const out = new Set<string>();
  for (const [i, id] of ids.entries()) {
    if (typeof id !== 'string' || !isUuid(id)) throw badInput(`${field}[${i}]`, `${field}[${i}] must be a UUID`);
    out.add(id);
    if (out.size > max) {
      const distinct = new Set(ids).size;
      throw badInput(field, `${field}: at most ${max} distinct ids per call, got ${distinct}; split the call`);
    }
  }
  return [...out];
}

/** Fails (NOT_FOUND, naming them) unless every id exists for the company, with one query: a delete is all or nothing. */
export async function requireAllExist(tx: QuotaOps, kind: QuotaKind, companyId: string, ids: string[]): Promise<void> {
  const found = new Set(await tx.existingIds(kind, companyId, ids));
  const missing = ids.filter((id) => !found.has(id));
  const what = kind === 'routers' ? 'router' : kind === 'clusters' ? 'cluster' : kind === 'templates' ? 'template' : 'integration';
  if (missing.length) throw new ServiceError('NOT_FOUND', `${what}(s) not found: ${missing.join(', ')}`, 'ids', { ids: missing });
}
