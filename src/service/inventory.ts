/**
 * Certificate inventory (docs/inventory.md): applying agents' reports and listing what they reported.
 * The decision is pure (src/inventory/decide.ts); this is the shell that reads the cluster's position, writes
 * the report and the new position in one transaction, and enforces the per-company quotas.
 */
import type { Logger } from 'pino';
import { decideReport } from '../inventory/decide.js';
import { agentActiveEvent, decideReporting } from '../inventory/silence.js';
import type { LogLimiter } from '../log/limiter.js';
import { daysUntilExpiry as daysLeftOf, latestNotAfterWithin } from '../model/days-left.js';
import { DEFAULT_CLUSTER_SILENCE_AFTER_MS, type CertificateFacts, type InventoryAck, type InventoryReport } from '../model/inventory.js';
import { SERVING_STATUSES, type ServingEndpointFacts, type ServingStatus } from '../model/serving.js';
import type {
  ClusterRecord,
  InventoryCertificateRecord,
  InventoryCursor,
  InventoryFilter,
  InventoryHealth,
  ListedCertificate,
  ServingEndpointRecord,
} from '../store/types.js';
import type { ServiceContext } from './context.js';
import { ServiceError } from '../model/errors.js';
import { acceptEventsInTransaction, type IngestDeps } from '../ingest/pipeline.js';
import { ingestDepsOf } from './runtime.js';
import { DEFAULT_QUOTAS, requireQuota } from './quotas.js';
import { isUuid, MAX_PAGE, requirePageSize } from './validate.js';
import { requireAllExist, requireIdList } from './ids.js';

export { DEFAULT_CLUSTER_SILENCE_AFTER_MS };
/** Longest expiringWithinDays (the monitoring configuration's threshold limit). */
const MAX_EXPIRING_WITHIN_DAYS = 3650;
/** Places listed per certificate (Certificate.places). */
export const MAX_PLACES = 20;
const DEFAULT_PAGE = 100;

export type ApplyOutcome = { ack: InventoryAck } | { resync: { reason: string } };

const parseTime = (s: string | null): number | null => (s === null ? null : Date.parse(s));

/** One reported endpoint as stored: the fields named one by one (nothing else of the body), times as epoch ms. */
function servingRecord(e: ServingEndpointFacts): ServingEndpointRecord {
  return {
    host: e.host,
    address: e.address,
    source: { kind: e.source.kind, namespace: e.source.namespace, name: e.source.name },
    status: e.status,
    reason: e.reason ?? null,
    servedSerial: e.servedSerial,
    servedNotAfter: parseTime(e.servedNotAfter),
    checkedAt: parseTime(e.checkedAt),
  };
}

function toRecord(companyId: string, clusterId: string, epoch: string, f: CertificateFacts, now: number): InventoryCertificateRecord {
  return {
    companyId,
    clusterId,
    namespace: f.namespace,
    secretName: f.secretName,
    certificateName: f.certificateName ?? null,
    certificateUid: f.certificateUid ?? null,
    serial: f.serial,
    notBefore: parseTime(f.notBefore),
    notAfter: parseTime(f.notAfter),
    subject: f.subject,
    commonName: f.commonName ?? null,
    dnsNames: f.dnsNames,
    issuer: f.issuer,
    issuerRef: f.issuerRef ?? null,
    readyStatus: f.ready?.status ?? null,
    readyReason: f.ready?.reason ?? null,
    applicationIds: f.applicationIds,
    labels: f.labels,
    chainNotAfter: parseTime(f.chainNotAfter),
    ignored: f.ignore === true,
    expiryThresholds: f.expiryThresholds?.length ? f.expiryThresholds : null,
    runbookUrl: f.runbookUrl ?? null,
    serving: f.serving === undefined ? null : f.serving.map(servingRecord),
    epoch,
    updatedAt: now,
  };
}

/**
 * Applies one validated report: all of it (rows and the cluster's new position) in one transaction, or nothing.
 * A duplicate and a resync write nothing. Throws QUOTA_EXCEEDED (nothing written) when the company would hold
 * more clusters or certificates than allowed. The applied report of a cluster marked silent clears the mark and
 * accepts its `evt.healthstatus.certmgr-agent.active` in the same transaction (with `ingest`; docs/inventory.md
 * "Silent clusters as events").
 */
export async function applyInventoryReport(
  ctx: ServiceContext,
  report: InventoryReport,
  opts: { log?: Logger; logLimiter?: LogLimiter | undefined; ingest?: IngestDeps | undefined } = {},
): Promise<ApplyOutcome> {
  const now = ctx.now();
  const { ingest } = opts;
  // read before the transaction (the routing snapshot reads the store); cached per company, so this is cheap
  const snap = ingest ? await ingest.snapshots.get(ctx.companyId) : undefined;
  let committed: (() => void) | undefined;
  const { companyId } = ctx;
  const clusterId = report.cluster.id;
  const silenceAfter = ctx.clusterSilenceAfterMs ?? DEFAULT_CLUSTER_SILENCE_AFTER_MS;
  let wasSilentFor: number | undefined;
  const out = await ctx.store.transaction(async (tx): Promise<ApplyOutcome> => {
    committed = undefined; // an attempt the store retries reports nothing
    const state = await tx.lockCluster(companyId, clusterId);
    const d = decideReport(state, report);
    const ack = (status: InventoryAck['status']): ApplyOutcome => ({ ack: { status, clusterId, epoch: report.epoch, seq: report.seq } });
    if (d.action === 'duplicate') return ack('duplicate');
    if (d.action === 'resync') return { resync: { reason: d.reason } };
    const added = report.upserts.length
      ? await tx.upsertInventory(
          companyId,
          clusterId,
          report.epoch,
          report.upserts.map((u) => toRecord(companyId, clusterId, report.epoch, u, now)),
        )
      : 0;
    let removed = report.deletes.length ? await tx.deleteInventory(companyId, clusterId, report.deletes) : 0;
    if (d.removeStale) removed += await tx.deleteInventoryOutsideEpoch(companyId, clusterId, report.epoch);
    const count = (state?.certificateCount ?? 0) + added - removed;
    if (added > 0) {
      // only a report that grows the inventory can exceed the quota: shrinking one is always accepted
      const limit = ctx.quotas?.maxCertificatesPerCompany ?? DEFAULT_QUOTAS.maxCertificatesPerCompany;
      const total = (await tx.certificateCountExcept(companyId, clusterId)) + count;
      if (total > limit)
        throw new ServiceError(
          'QUOTA_EXCEEDED',
          `quota exceeded: a company may have at most ${limit} inventory certificates (maxCertificatesPerCompany in --limits-file) and this report would make it ${total}; nothing was applied`,
          undefined,
          { quota: 'maxCertificatesPerCompany', limit, count: total - added },
        );
    }
    // Last, just before the commit: the count takes the company's quota lock, held until the commit, so new
    // clusters of a company wait on each other only for the count and the commit, not for their rows' writes
    // (taken first, it would make every first snapshot of a company apply one at a time).
    if (state === null) await requireQuota(tx, companyId, 'clusters', ctx.quotas);
    if (state && now - state.lastSeenAt > silenceAfter) wasSilentFor = now - state.lastSeenAt;
    const back = decideReporting(state, now);
    if (back.resolve && ingest && snap) {
      const ev = agentActiveEvent(
        { clusterId, clusterName: report.cluster.name, agentVersion: report.agentVersion, lastSeenAt: now },
        now,
        back.silentForMs,
        'AgentReporting',
      );
      committed = (await acceptEventsInTransaction(ctx, tx, snap, [ev], ingest)).committed;
    }
    const rec: ClusterRecord = {
      companyId,
      id: clusterId,
      name: report.cluster.name,
      agentVersion: report.agentVersion,
      epoch: report.epoch,
      lastSeq: report.seq,
      snapshotComplete: d.snapshotComplete,
      firstSeenAt: state?.firstSeenAt ?? now,
      lastSeenAt: now,
      certificateCount: count,
      // reporting: the mark goes (its .active accepted just above)
      silentSince: null,
    };
    await tx.putCluster(rec);
    return ack('applied');
  });
  committed?.();
  if (wasSilentFor !== undefined && opts.log && (!opts.logLimiter || opts.logLimiter.admit(opts.log, 'warn', companyId, 'cluster_silence')))
    opts.log.warn(
      { companyId, clusterId, clusterName: report.cluster.name, silentMs: wasSilentFor },
      'cluster reporting again after silence',
    );
  return out;
}

/**
 * Removes clusters and their inventory (a decommissioned cluster whose agent is gone): all of `ids` or none
 * (NOT_FOUND names the missing). A cluster marked silent gets its `.active` (ClusterDeleted) in the same
 * transaction, so the incident its `.notready` opened is resolved. An agent still running re-creates its cluster
 * at its next report (409, then a full snapshot).
 */
export async function deleteClusters(ctx: ServiceContext, ids: readonly unknown[]): Promise<string[]> {
  const wanted = requireIdList('ids', ids).map((id) => id.toLowerCase());
  const rt = ctx.runtime;
  const ingest = rt ? ingestDepsOf(rt, rt.log) : undefined;
  const snap = ingest ? await ingest.snapshots.get(ctx.companyId) : undefined;
  const now = ctx.now();
  let committed: (() => void) | undefined;
  const deleted = await ctx.store.transaction(async (tx) => {
    committed = undefined;
    await requireAllExist(tx, 'clusters', ctx.companyId, wanted);
    // one at a time with the reports of each cluster (the apply's lock), in id order so two deletes never deadlock
    for (const id of [...wanted].sort()) await tx.lockCluster(ctx.companyId, id);
    const gone = await tx.deleteClusters(ctx.companyId, wanted);
    const resolves = gone
      .filter((c) => c.silentSince !== null)
      .map((c) =>
        agentActiveEvent(
          { clusterId: c.id, clusterName: c.name, agentVersion: c.agentVersion, lastSeenAt: c.lastSeenAt },
          now,
          now - c.silentSince!,
          'ClusterDeleted',
        ),
      );
    if (resolves.length && ingest && snap) committed = (await acceptEventsInTransaction(ctx, tx, snap, resolves, ingest)).committed;
    return gone.map((c) => c.id);
  });
  committed?.();
  return deleted;
}

// ---------------------------------------------------------------------------------------------------------------
// Listing

export interface CertificateFilterInput {
  clusterId?: string | null;
  namespace?: string | null;
  applicationId?: string | null;
  expiringWithinDays?: number | null;
  health?: InventoryHealth | null;
  /** the API's name of a status (servingStatusName) */
  servingStatus?: string | null;
  servingProblem?: boolean | null;
}

/** A serving status as the API names it: `NOT_PROBED` for `notProbed` (GraphQL enum ServingStatus, CSV). */
export const servingStatusName = (s: ServingStatus): string => s.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();

const SERVING_STATUS_BY_NAME = new Map(SERVING_STATUSES.map((s) => [servingStatusName(s), s]));

export function encodeCertificateCursor(c: ListedCertificate): string {
  const pos: InventoryCursor = { notAfter: c.notAfter, clusterId: c.clusterId, namespace: c.namespace, secretName: c.secretName };
  return Buffer.from(JSON.stringify([pos.notAfter, pos.clusterId, pos.namespace, pos.secretName])).toString('base64url');
}

function decodeCertificateCursor(s: string, field: string): InventoryCursor {
  const bad = () => new ServiceError('BAD_USER_INPUT', `${field} is not a cursor returned by certificates`, field);
  if (s.length > 2048) throw bad();
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(v) || v.length !== 4) throw bad();
  const [notAfter, clusterId, namespace, secretName] = v as unknown[];
  if (!(notAfter === null || Number.isSafeInteger(notAfter))) throw bad();
  if (typeof clusterId !== 'string' || typeof namespace !== 'string' || typeof secretName !== 'string') throw bad();
  return { notAfter: notAfter as number | null, clusterId, namespace, secretName };
}

/** The filter as the store takes it; `where` names the input (GraphQL `filter`, REST query parameters). */
export function certificateFilter(input: CertificateFilterInput | null | undefined, now: number, where = 'filter.'): InventoryFilter {
  const f: InventoryFilter = {};
  if (!input) return f;
  if (input.clusterId != null) {
    if (!isUuid(input.clusterId)) throw new ServiceError('BAD_USER_INPUT', `${where}clusterId must be a UUID`, `${where}clusterId`);
    f.clusterId = input.clusterId.toLowerCase();
  }
  if (input.namespace != null) {
    if (input.namespace.length > 63)
      throw new ServiceError('BAD_USER_INPUT', `${where}namespace is at most 63 characters`, `${where}namespace`);
    f.namespace = input.namespace;
  }
  if (input.applicationId != null) {
    if (input.applicationId.length > 256)
      throw new ServiceError('BAD_USER_INPUT', `${where}applicationId is at most 256 characters`, `${where}applicationId`);
    f.applicationId = input.applicationId;
  }
  if (input.expiringWithinDays != null) {
    const d = input.expiringWithinDays;
    if (!Number.isInteger(d) || d < 0 || d > MAX_EXPIRING_WITHIN_DAYS)
      throw new ServiceError(
        'BAD_USER_INPUT',
        `${where}expiringWithinDays must be an integer from 0 to ${MAX_EXPIRING_WITHIN_DAYS}`,
        `${where}expiringWithinDays`,
      );
    // the days-left rule (src/model/days-left.ts): every certificate showing at most d days left
    f.notAfterAtMost = latestNotAfterWithin(d, now);
  }
  if (input.health != null) {
    if (!['READY', 'NOT_READY', 'UNKNOWN'].includes(input.health))
      throw new ServiceError('BAD_USER_INPUT', `${where}health must be READY, NOT_READY or UNKNOWN`, `${where}health`);
    f.health = input.health;
  }
  if (input.servingStatus != null) {
    const s = SERVING_STATUS_BY_NAME.get(input.servingStatus);
    if (s === undefined)
      throw new ServiceError(
        'BAD_USER_INPUT',
        `${where}servingStatus must be one of ${[...SERVING_STATUS_BY_NAME.keys()].join(', ')}`,
        `${where}servingStatus`,
      );
    f.servingStatus = s;
  }
  if (input.servingProblem != null) f.servingProblem = input.servingProblem;
  return f;
}

export async function listCertificates(
  ctx: ServiceContext,
  filter: InventoryFilter,
  args: { first?: number | null; after?: string | null },
  where = '',
): Promise<{ nodes: ListedCertificate[]; hasNextPage: boolean }> {
  const first = requirePageSize(args.first, DEFAULT_PAGE, `${where}first`);
  const after = args.after ? decodeCertificateCursor(args.after, `${where}after`) : null;
  const rows = await ctx.store.listInventory(ctx.companyId, filter, after, first + 1);
  return { nodes: rows.slice(0, first), hasNextPage: rows.length > first };
}

export async function listClusters(
  ctx: ServiceContext,
  args: { first?: number | null; after?: string | null },
): Promise<{ nodes: ClusterRecord[]; hasNextPage: boolean }> {
  const first = requirePageSize(args.first, MAX_PAGE);
  if (args.after != null && !isUuid(args.after))
    throw new ServiceError('BAD_USER_INPUT', 'after is not a cursor returned by clusters', 'after');
  const rows = await ctx.store.listClusters(ctx.companyId, {
    after: args.after?.toLowerCase(),
    limit: first + 1,
  });
  return { nodes: rows.slice(0, first), hasNextPage: rows.length > first };
}

export const isSilent = (c: Pick<ClusterRecord, 'lastSeenAt'>, now: number, silenceAfterMs: number): boolean =>
  now - c.lastSeenAt > silenceAfterMs;

/** READY / NOT_READY / UNKNOWN from the Certificate's Ready condition (UNKNOWN also without a Certificate). */
export function healthOf(readyStatus: InventoryCertificateRecord['readyStatus']): InventoryHealth {
  return readyStatus === 'True' ? 'READY' : readyStatus === 'False' ? 'NOT_READY' : 'UNKNOWN';
}

/** src/model/days-left.ts's days until notAfter (whole days, rounded down; negative once expired); null without a notAfter. */
export function daysUntilExpiry(notAfter: number | null, now: number): number | null {
  return notAfter === null ? null : daysLeftOf(notAfter, now);
}
