/**
 * The thin I/O shell around `decideExpiry` (docs/expiry.md): every `intervalMs`, for each company that has
 * reported clusters and whose monitoring configuration is enabled, it pages through the inventory rows whose
 * notAfter is within the largest threshold (keyset pages over the (company_id, not_after) index: memory is
 * bounded by the page size), groups them into certificates, decides, and accepts the events through the
 * ingestion path of POST /v1/events IN THE SAME TRANSACTION as the marks: an event is accepted exactly when
 * its mark is written, so a crash neither loses nor repeats one.
 *
 * Replicas: every replica runs a scanner. Each page's transaction first takes the company's advisory lock with
 * a try-lock (PostgreSQL, transaction-scoped; SQLite transactions are serialized anyway) and reads the marks
 * only after it: a replica that does not get the lock leaves the company to the one that has it, for this
 * round. Two scanners never decide on the same marks at once.
 */
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { defaultMonitoringConfig, type MonitoringConfigInput } from '../model/monitoring.js';
import { realClock, type Clock } from '../runtime/timers.js';
import { acceptEventsInTransaction, type IngestDeps } from '../ingest/pipeline.js';
import { serviceContext } from '../service/context.js';
import type { InternalEvent } from '../events/families.js';
import type { ExpiryCursor, ExpiryMarksRecord, Store } from '../store/types.js';
import { cutPage, groupCertificates, type ExpiryCertificate } from './certificates.js';
import { DAY_MS, DEFAULT_EXPIRY_SCAN_INTERVAL_MS, decideExpiry, decodeMarks, scanHorizon } from './decide.js';
import { expiryEvent } from './message.js';
import { scanWeakLinks } from './weak-link-scan.js';

const DEFAULT_PAGE_SIZE = 1000;
/** Marks of a certificate gone from the inventory are kept this long after its notAfter (an agent resync may bring it back). */
const MARK_RETENTION_MS = 30 * DAY_MS;
const COMPANY_PAGE = 1000;

export interface ExpiryScannerOptions {
  store: Store;
  /** the ingestion dependencies of POST /v1/events: routing snapshots, metrics, the delivery signal */
  ingest: IngestDeps;
  log: Logger;
  clock?: Clock;
  /** default DEFAULT_EXPIRY_SCAN_INTERVAL_MS */
  intervalMs?: number;
  /** inventory rows per transaction; default 1,000 */
  pageSize?: number;
  /** a company whose scan (by any replica) started less than this ago is skipped; default intervalMs / 2 */
  minGapMs?: number;
  /** Prometheus registry for the scan's metrics (the events themselves count in certmgr_notify_events_received_total) */
  registry?: Registry;
}

interface ScanMetrics {
  companyScans: Counter<'outcome'>;
  unrouted: Counter;
  lastScan: Gauge;
  duration: Gauge;
}

function scanMetrics(registry: Registry): ScanMetrics {
  return {
    companyScans: new Counter({
      name: 'certmgr_notify_expiry_company_scans_total',
      help: 'Expiry scans of a company, by outcome: scanned, disabled (configuration off), recent (scanned moments ago by a replica), busy (another replica scanning), failed',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    unrouted: new Counter({
      name: 'certmgr_notify_expiration_events_unrouted_total',
      help: 'Expiration events the expiry scan accepted that no enabled router matched: a certificate crossed a threshold and nobody was notified',
      registers: [registry],
    }),
    lastScan: new Gauge({
      name: 'certmgr_notify_expiry_last_scan_timestamp_seconds',
      help: 'When the last complete expiry scan round of this replica ended (Unix time)',
      registers: [registry],
    }),
    duration: new Gauge({
      name: 'certmgr_notify_expiry_last_scan_duration_seconds',
      help: 'How long the last complete expiry scan round of this replica took',
      registers: [registry],
    }),
  };
}

export interface CompanyScan {
  companyId: string;
  /**
   * disabled: the configuration is off; recent: a scan of the company started less than minGapMs ago (another
   * replica's, usually); busy: another scanner holds the company's lock
   */
  skipped?: 'disabled' | 'recent' | 'busy';
  rows: number;
  certificates: number;
  events: number;
  pages: number;
}

/** The decisions of one page, pure: the events to accept and the marks to write with them. */
function decidePage(
  companyId: string,
  certs: readonly ExpiryCertificate[],
  stored: readonly ExpiryMarksRecord[],
  config: MonitoringConfigInput,
  now: number,
): { events: InternalEvent[]; marks: ExpiryMarksRecord[]; outcomes: Record<string, number> } {
  const byKey = new Map(stored.map((m) => [m.certKey, m]));
  const events: InternalEvent[] = [];
  const marks: ExpiryMarksRecord[] = [];
  const outcomes: Record<string, number> = {};
  for (const cert of certs) {
    const s = byKey.get(cert.key);
    const d = decideExpiry(cert, config, s && { notAfter: s.notAfter, marks: decodeMarks(s.marks) }, now);
    const outcome = d.skipped ?? 'emitted';
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    if (d.due) events.push(expiryEvent(cert, d.due, now));
    if (d.next)
      marks.push({
        companyId,
        certKey: cert.key,
        issuer: cert.issuer ?? '',
        serial: cert.serial,
        notAfter: d.next.notAfter,
        marks: d.next.marks,
        updatedAt: now,
      });
  }
  return { events, marks, outcomes };
}

export class ExpiryScanner {
  readonly #o: Required<Omit<ExpiryScannerOptions, 'clock' | 'registry'>> & { clock: Clock };
  readonly #metrics: ScanMetrics | undefined;
  #timer: unknown;
  #running: Promise<unknown> | undefined;
  #stopped = false;

  constructor(opts: ExpiryScannerOptions) {
    const intervalMs = opts.intervalMs ?? DEFAULT_EXPIRY_SCAN_INTERVAL_MS;
    this.#o = {
      clock: realClock,
      intervalMs,
      pageSize: DEFAULT_PAGE_SIZE,
      minGapMs: Math.floor(intervalMs / 2),
      ...opts,
      log: opts.log.child({ component: 'expiry' }),
    };
    this.#metrics = opts.registry ? scanMetrics(opts.registry) : undefined;
  }

  /** Scans now (catch-up after downtime), then `intervalMs` after each scan ends. */
  start(): void {
    this.#stopped = false;
    this.#schedule(0);
  }

  /** Stops the timer and waits for a running scan (its current page commits or rolls back). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running?.catch(() => undefined);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      this.#running = this.scanOnce()
        .then((r) => this.#o.log.debug({ companies: r.length, events: r.reduce((n, c) => n + c.events, 0) }, 'expiry scan done'))
        .catch((err: unknown) => this.#o.log.error({ err }, 'expiry scan failed; retried at the next interval'))
        .finally(() => {
          this.#running = undefined;
          this.#schedule(this.#o.intervalMs);
        });
    }, ms);
  }

  /** One round over every company with reported clusters. */
  async scanOnce(): Promise<CompanyScan[]> {
    const started = performance.now();
    const out: CompanyScan[] = [];
    let after: string | null = null;
    for (;;) {
      const companies = await this.#o.store.listInventoryCompanies(after, COMPANY_PAGE);
      for (const companyId of companies) {
        if (this.#stopped) return out;
        try {
          const r = await this.scanCompany(companyId);
          this.#metrics?.companyScans.inc({ outcome: r.skipped ?? 'scanned' });
          out.push(r);
        } catch (err) {
          // one company's failure (e.g. a broken row) must not stop the others
          this.#metrics?.companyScans.inc({ outcome: 'failed' });
          this.#o.log.error({ err, companyId }, 'expiry scan of a company failed');
        }
      }
      if (companies.length < COMPANY_PAGE) break;
      after = companies[companies.length - 1]!;
    }
    this.#metrics?.lastScan.set(this.#o.clock.now() / 1000);
    this.#metrics?.duration.set((performance.now() - started) / 1000);
    return out;
  }

  async scanCompany(companyId: string): Promise<CompanyScan> {
    const { store, ingest, pageSize, log } = this.#o;
    const report: CompanyScan = { companyId, rows: 0, certificates: 0, events: 0, pages: 0 };
    // the configuration from the store, not the routing snapshot: that may lag another replica's change by its TTL
    const config = (await store.getMonitoringConfig(companyId)) ?? defaultMonitoringConfig(companyId);
    if (!config.enabled) return { ...report, skipped: 'disabled' };
    const now = this.#o.clock.now();
    // Replicas scan on their own timers: the one that starts first takes the company for this interval, so N
    // replicas do not read the same pages N times. (Only work is saved here; the lock below keeps it correct.)
    if (!(await store.claimExpiryScan(companyId, now, now - this.#o.minGapMs))) return { ...report, skipped: 'recent' };
    // read before the transactions: the routing snapshot reads the store
    const snap = await ingest.snapshots.get(companyId);
    const horizon = scanHorizon(config.thresholds, now);
    // certificates with their own thresholds (docs/annotations.md) are in range by those: one index read
    const maxOwn = await store.maxOwnExpiryThreshold(companyId);
    const own = maxOwn !== null ? { now, notAfterMax: scanHorizon([maxOwn], now) } : undefined;
    const ctx = serviceContext(store, companyId, { now: () => now });
    let cursor: ExpiryCursor | null = null;
    for (;;) {
      const page = await store.transaction(async (tx) => {
        if (!(await tx.tryLockExpiry(companyId))) return undefined;
        const rows = await tx.listExpiryInventory(companyId, horizon, cursor, pageSize, own);
        const { take, next } = cutPage(rows, pageSize);
        const certs = groupCertificates(take);
        const stored = await tx.getExpiryMarks(
          companyId,
          certs.map((c) => c.key),
        );
        const { events, marks, outcomes } = decidePage(companyId, certs, stored, config, now);
        const accepted = events.length ? await acceptEventsInTransaction(ctx, tx, snap, events, ingest) : undefined;
        if (marks.length) await tx.putExpiryMarks(marks);
        return {
          rows: take.length,
          certificates: certs.length,
          events: events.length,
          unmatched: accepted?.unmatched ?? 0,
          outcomes,
          committed: accepted?.committed,
          next,
        };
      });
      if (!page) {
        log.debug({ companyId }, 'another scanner holds the expiry lock of this company; left to it');
        return { ...report, skipped: 'busy' };
      }
      page.committed?.();
      // counted once committed, like certmgr_notify_events_received_total
      if (page.unmatched) this.#metrics?.unrouted.inc(page.unmatched);
      report.pages++;
      report.rows += page.rows;
      report.certificates += page.certificates;
      report.events += page.events;
      if (page.events) log.info({ companyId, events: page.events, outcomes: page.outcomes }, 'expiration events accepted');
      if (!page.next || this.#stopped) break;
      cursor = page.next;
    }
    // CAs that expire before certificates they signed (src/expiry/weak-link.ts): one transaction per round
    const weak = await scanWeakLinks({ store, ctx, snap, ingest, companyId, config, now, log });
    if (weak) {
      weak.committed?.();
      if (weak.unmatched) this.#metrics?.unrouted.inc(weak.unmatched);
      report.events += weak.events;
    }
    await store.transaction(async (tx) => {
      if (await tx.tryLockExpiry(companyId)) await tx.deleteStaleExpiryMarks(companyId, now - MARK_RETENTION_MS, 1000);
    });
    return report;
  }
}
