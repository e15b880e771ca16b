/**
 * `svc-api-key` authentication and authorization: each key belongs to one company and has one scope.
 * Constant-time comparison over all keys.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { API_KEY_SCOPES, type ApiKeyEntry, type ApiKeyScope } from '../config.js';

export const API_KEY_HEADER = 'svc-api-key';

/**
 * What a request does, as far as scopes go: `query` (GraphQL queries, REST GET/HEAD), `mutation` (GraphQL
 * mutations, REST writes), `events` (POST /v1/events), `inventory` (agents' inventory reports, not served yet).
 */
export type ApiOperation = 'query' | 'mutation' | 'events' | 'inventory';

const GRANTS: Record<ApiKeyScope, readonly ApiOperation[]> = {
  admin: ['query', 'mutation', 'events', 'inventory'],
  // an agent in another cluster only reports: it must not read or change the configuration
  agent: ['events', 'inventory'],
  read: ['query'],
};

/** Whether a key of `scope` may perform `op`. */
export function allowed(scope: ApiKeyScope, op: ApiOperation): boolean {
  return GRANTS[scope].includes(op);
}

const OPERATION_TEXT: Record<ApiOperation, string> = {
  query: 'queries (GraphQL queries, REST GET)',
  mutation: 'changes (GraphQL mutations, REST PUT)',
  events: 'posting events',
  inventory: 'posting inventory',
};

/** The 403 message: which scopes the operation needs and which the key has (never the key itself). */
export function forbiddenMessage(scope: ApiKeyScope, op: ApiOperation): string {
  const need = API_KEY_SCOPES.filter((s) => allowed(s, op)).map((s) => `'${s}'`);
  return `${OPERATION_TEXT[op]} need an API key of scope ${need.join(' or ')}; this key has scope '${scope}'`;
}

export interface KeyIdentity {
  companyId: string;
  scope: ApiKeyScope;
  /** Who the key is, for records' authors (a silence's createdBy): `api-key:` and a short prefix of the key's SHA-256. */
  keyId?: string;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export class ApiKeyRing {
  private readonly entries: ({ hash: Buffer } & KeyIdentity)[];
  constructor(keys: ApiKeyEntry[]) {
    // no scope: admin (keys from --api-key, the environment, the in-process operator, older keys files)
    this.entries = keys.map((k) => ({ hash: digest(k.key), companyId: k.companyId, scope: k.scope ?? 'admin' }));
  }
  get size(): number {
    return this.entries.length;
  }
  /** Returns the company and scope of the key, or null. Every entry is compared, so timing does not reveal which matched. */
  identify(key: string | undefined): KeyIdentity | null {
    if (typeof key !== 'string' || key === '') return null;
    const h = digest(key);
    let found: KeyIdentity | null = null;
    for (const e of this.entries)
      if (timingSafeEqual(e.hash, h) && found === null)
        found = { companyId: e.companyId, scope: e.scope, keyId: `api-key:${e.hash.toString('hex', 0, 6)}` };
    return found;
  }
  /** Returns the company of the key, or null. */
  companyOf(key: string | undefined): string | null {
    return this.identify(key)?.companyId ?? null;
  }
}
