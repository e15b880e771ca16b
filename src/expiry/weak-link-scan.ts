/**
 * The I/O shell of the chain's weakest link (src/expiry/weak-link.ts, docs/expiry.md "CA expiring before its
 * certificates"), run by the expiry scan once per company and round, after its pages: one transaction under the
 * company's expiry lock reads the rows concerned (migration 20's indexes: chains that expire before their leaf,
 * roots outlived by certificates they signed, and those certificates), decides, and accepts the events with
 * their marks, so a CA is reported exactly once whatever the replicas and restarts.
 */
import type { Logger } from 'pino';
import type { InternalEvent } from '../events/families.js';
import type { MonitoringConfigInput } from '../model/monitoring.js';
import type { RoutingSnapshots } from '../routing/snapshot.js';
import type { ServiceContext } from '../service/context.js';
import { acceptEventsInTransaction, type IngestDeps } from '../ingest/pipeline.js';
import type { Transactional, WeakLinkMark, WeakLinkRow } from '../store/types.js';
import { decideWeakLink, WEAK_LINK_STALE_MS, weakLinkEvent, weakLinksOf } from './weak-link.js';

type Snapshot = Awaited<ReturnType<RoutingSnapshots['get']>>;

/** Root rows (places) read per scan: the roots outlived, in subject order. */
const MAX_ROOT_ROWS = 1000;
/** Roots whose certificates are read per scan. */
const MAX_ROOTS = 100;
/** Certificates (places) read per root: the latest notAfter first; beyond it the count says "at least". */
const MAX_OUTLIVING_ROWS = 1000;
/** Rows whose chain expires before their leaf read per scan, in (issuer, chainNotAfter) order. */
const MAX_CHAIN_ROWS = 10_000;
/** Stale marks deleted per company and scan. */
const STALE_DELETE = 1000;

export interface WeakLinkScanOptions {
  store: Transactional;
  ctx: ServiceContext;
  snap: Snapshot;
  ingest: IngestDeps;
  companyId: string;
  config: MonitoringConfigInput;
  now: number;
  log: Logger;
}

export interface WeakLinkScan {
  /** CAs found outlived */
  cas: number;
  events: number;
  unmatched: number;
  outcomes: Record<string, number>;
  /** call once the transaction committed (counts the accepted events) */
  committed?: (() => void) | undefined;
}

/** Undefined when another scanner holds the company's expiry lock. */
export async function scanWeakLinks(o: WeakLinkScanOptions): Promise<WeakLinkScan | undefined> {
  const { store, companyId, now } = o;
  const result = await store.transaction(async (tx) => {
    if (!(await tx.tryLockExpiry(companyId))) return undefined;
    const chain = await tx.listWeakChainRows(companyId, now, MAX_CHAIN_ROWS);
    const roots = await tx.listOutlivedRoots(companyId, now, MAX_ROOT_ROWS);
    const rows: WeakLinkRow[] = [...chain, ...roots];
    const subjects = [...new Map(roots.map((r) => [r.subject, r.notAfter])).entries()].slice(0, MAX_ROOTS);
    const cut = new Set<string>();
    for (const [subject, notAfter] of subjects) {
      if (subject === null) continue;
      const signed = await tx.listCertificatesOutliving(companyId, subject, Math.max(notAfter, now), MAX_OUTLIVING_ROWS);
      if (signed.length >= MAX_OUTLIVING_ROWS) cut.add(subject);
      rows.push(...signed);
    }
    const cas = weakLinksOf(rows, now);
    // a read cut at its bound: the count of that CA is a lower bound (the last chain group may be partial)
    const lastChain = chain.length >= MAX_CHAIN_ROWS ? chain[chain.length - 1] : undefined;
    for (const ca of cas) {
      if (ca.source === 'secret' && ca.dn !== null && cut.has(ca.dn)) ca.truncated = true;
      if (ca.source === 'chain' && lastChain && ca.dn === lastChain.issuer && ca.notAfter === lastChain.chainNotAfter) ca.truncated = true;
    }
    const stored = new Map(
      (
        await tx.getWeakLinkMarks(
          companyId,
          cas.map((c) => c.key),
        )
      ).map((m) => [m.caKey, m]),
    );
    const events: InternalEvent[] = [];
    const marks: WeakLinkMark[] = [];
    const outcomes: Record<string, number> = {};
    for (const ca of cas) {
      const d = decideWeakLink(ca, o.config, stored.get(ca.key), now);
      const outcome = d.skipped ?? 'emitted';
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      if (d.due) events.push(weakLinkEvent(d.due, now));
      if (d.next) marks.push({ companyId, caKey: ca.key, notAfter: d.next.notAfter, leafCount: d.next.leafCount, reportedAt: now });
    }
    const accepted = events.length ? await acceptEventsInTransaction(o.ctx, tx, o.snap, events, o.ingest) : undefined;
    if (marks.length) await tx.putWeakLinkMarks(marks);
    await tx.deleteStaleWeakLinkMarks(companyId, now - WEAK_LINK_STALE_MS, STALE_DELETE);
    return { cas: cas.length, events: events.length, unmatched: accepted?.unmatched ?? 0, outcomes, committed: accepted?.committed };
  });
  if (result?.events)
    o.log.info({ companyId, events: result.events, outcomes: result.outcomes }, 'CA expiring before its certificates: events accepted');
  return result;
}
