/**
 * The inventory reporter, the thin shell around facts.ts and batch.ts: after the caches synced, a full snapshot
 * of every TLS Secret under a new random epoch, then deltas of the coalesced changes (every `batchMs`, or at
 * `maxItems` changes), and an empty delta as a heartbeat when nothing was reported for `heartbeatMs`. One report
 * in flight at a time. A report that fails is tried once more; when that fails too (the hub is unreachable for
 * longer than one retry) the hub may have missed something, so the reporter waits for the hub with backoff and
 * starts over with a new epoch and a full snapshot, as it does on 409 RESYNC_REQUIRED and at every start.
 * A 429 (QUOTA_EXCEEDED, or a rate limit) applied nothing and broke nothing: the SAME report goes again after
 * `Retry-After` (at least the backoff), for as long as it takes, never a resync (a snapshot would only be refused
 * the same way, and cost the hub more). A hub without the endpoint (404) is logged once and asked again every
 * `unsupportedRetryMs`.
 */
import { randomUUID } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { InventoryClient, InventoryOutcome } from '../../client/inventory.js';
import type { ResilientInformer } from '../../kube/informer.js';
import { INVENTORY_PROTOCOL, MAX_INVENTORY_ITEMS_PER_REPORT, type InventoryReport } from '../../model/inventory.js';
import type { ServingEndpointFacts } from '../../model/serving.js';
import { backoffDelay, realClock, sleep, type BackoffPolicy, type Clock } from '../../runtime/timers.js';
import type { CertManagerObject } from '../health/condition.js';
import { ChangeBuffer, jsonSize, packReports } from './batch.js';
import { CERTIFICATE_NAME_ANNOTATION, certificateFactsOf, type TlsSecretFacts } from './facts.js';

export interface InventoryMetrics {
  report(kind: InventoryReport['kind'], outcome: InventoryOutcome['kind']): void;
  resync(reason: ResyncReason): void;
  certificates(n: number): void;
  pendingChanges(n: number): void;
}

type ResyncReason = 'start' | 'resync-required' | 'gap' | 'rejected' | 'unsupported';

/** What the reporter uses of an informer (its cache and events). */
type Cache<T extends KubernetesObject> = Pick<ResilientInformer<T>, 'on' | 'get' | 'list'>;

export interface InventoryReporterOptions {
  client: Pick<InventoryClient, 'post'>;
  secrets: Cache<TlsSecretFacts>;
  /** cert-manager Certificates (name, uid, issuerRef, Ready, application ids); optional */
  certificates?: Cache<CertManagerObject> | undefined;
  cluster: { id: string; name: string };
  agentVersion: string;
  log: Logger;
  clock?: Clock;
  /** a delta goes out this long after the first change it carries; default 1 s */
  batchMs?: number | undefined;
  /** default 60 s */
  heartbeatMs?: number | undefined;
  /** items per report; default MAX_INVENTORY_ITEMS_PER_REPORT */
  maxItems?: number;
  /** JSON bytes of the items of one report; default 512 KiB (the hub's body limit is 1 MiB); halved after a 413 */
  maxReportBytes?: number;
  /** default 1 s doubling to 30 s */
  backoff?: BackoffPolicy | undefined;
  /** a hub answering 404 is asked again this often; default 5 min */
  unsupportedRetryMs?: number | undefined;
  metrics?: InventoryMetrics;
  /**
   * The endpoints served with each Secret and their verdicts (serving/prober.ts, docs/serving.md): a Secret's
   * row carries them, and a change of them is a delta for that Secret.
   */
  serving?:
    | {
        factsOf(namespace: string, secretName: string): ServingEndpointFacts[];
        onChange(listener: (namespace: string, secretName: string) => void): void;
      }
    | undefined;
}

const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 30_000, jitter: 0.2 };

export class InventoryReporter {
  private readonly clock: Clock;
  private readonly changes = new ChangeBuffer();
  private readonly abort = new AbortController();
  private wake: (() => void) | undefined;
  private loopPromise: Promise<void> | undefined;
  private acceptedOnce = false;
  private acceptedResolve!: () => void;
  /** resolves when the hub accepted the first report */
  readonly firstAccepted: Promise<void>;
  private unsupportedLogged = false;
  private resyncReason: ResyncReason | undefined = 'start';
  private epoch = '';
  private seq = 0;
  private lastAcceptedAt = 0;
  private firstChangeAt: number | undefined;
  private maxBytes: number;
  readonly stats = { reports: 0, snapshots: 0, failures: 0, throttled: 0 };

  constructor(private readonly opts: InventoryReporterOptions) {
    this.clock = opts.clock ?? realClock;
    this.maxBytes = opts.maxReportBytes ?? 512 * 1024;
    this.firstAccepted = new Promise((r) => (this.acceptedResolve = r));
    const secrets = opts.secrets;
    const upsert = (s: TlsSecretFacts): void => this.note(s.metadata.namespace, s.metadata.name);
    secrets.on('add', upsert);
    secrets.on('update', upsert);
    secrets.on('delete', (s) => this.changed({ delete: { namespace: s.metadata.namespace, secretName: s.metadata.name } }));
    // A relist needs no snapshot: the informer reports what it changed as these events (client-node's ListWatch
    // deletes what the new list lacks and updates what has a new resourceVersion), so deltas carry it. A snapshot
    // of 100,000 Secrets after every apiserver restart took the CPU the restarted apiserver needed to refill its
    // caches, which every relist waits for (docs/performance.md, "Scale").
    const fromCert = (c: CertManagerObject): void => {
      const ns = c.metadata?.namespace;
      const secretName = c.spec?.secretName;
      if (ns && typeof secretName === 'string' && secretName) this.note(ns, secretName);
    };
    opts.certificates?.on('add', fromCert);
    opts.certificates?.on('update', fromCert);
    opts.certificates?.on('delete', fromCert);
    opts.serving?.onChange((ns, name) => this.note(ns, name));
  }

  get accepted(): boolean {
    return this.acceptedOnce;
  }

  get pendingChanges(): number {
    return this.changes.size;
  }

  /** Call once the caches are synced. */
  start(): void {
    this.loopPromise ??= this.loop().catch((e: unknown) => this.opts.log.error({ err: e }, 'inventory reporter failed'));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.wake?.();
    await this.loopPromise;
  }

  private resync(reason: ResyncReason): void {
    if (!this.loopPromise) return; // the start is a snapshot anyway
    this.resyncReason ??= reason;
    this.wake?.();
  }

  /** The Secret's current facts as an upsert (it may be gone: the delete is then already noted). */
  private note(namespace: string, name: string): void {
    const s = this.opts.secrets.get(name, namespace);
    if (!s) return;
    this.changed({ upsert: this.factsOf(s) });
  }

  private changed(c: Parameters<ChangeBuffer['add']>[0]): void {
    if (this.resyncReason !== undefined) return; // the next snapshot reads the cache
    this.changes.add(c);
    this.opts.metrics?.pendingChanges(this.changes.size);
    // the first change sets the batch deadline (the loop may be idling until the heartbeat); a full batch goes now
    if (this.firstChangeAt === undefined || this.changes.size >= this.maxItems) {
      this.firstChangeAt ??= this.clock.now();
      this.wake?.();
    }
  }

  private factsOf(s: TlsSecretFacts): ReturnType<typeof certificateFactsOf> {
    const certName = s.metadata.annotations?.[CERTIFICATE_NAME_ANNOTATION];
    const cert = certName ? this.opts.certificates?.get(certName, s.metadata.namespace) : undefined;
    const facts = certificateFactsOf(s, cert);
    const serving = this.opts.serving?.factsOf(s.metadata.namespace, s.metadata.name);
    return serving?.length ? { ...facts, serving } : facts;
  }

  private get maxItems(): number {
    return Math.min(MAX_INVENTORY_ITEMS_PER_REPORT, Math.max(1, this.opts.maxItems ?? MAX_INVENTORY_ITEMS_PER_REPORT));
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  /** Sleeps until `ms` passed, a wake-up (enough changes, a resync, stop) or the abort. */
  private async idle(ms: number): Promise<void> {
    const woken = new AbortController();
    this.wake = () => woken.abort();
    await sleep(this.clock, Math.max(0, ms), AbortSignal.any([this.abort.signal, woken.signal]));
    this.wake = undefined;
  }

  private report(kind: InventoryReport['kind'], items: Pick<InventoryReport, 'upserts' | 'deletes'>, final?: boolean): InventoryReport {
    return {
      protocol: INVENTORY_PROTOCOL,
      // lower case, as the hub stores and echoes it (resolveClusterId lower-cases too; an id given directly may not be)
      cluster: { id: this.opts.cluster.id.toLowerCase(), name: this.opts.cluster.name },
      agentVersion: this.opts.agentVersion,
      epoch: this.epoch,
      seq: ++this.seq,
      kind,
      final,
      upserts: items.upserts,
      deletes: items.deletes,
    };
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      if (this.resyncReason !== undefined) {
        await this.snapshot();
        continue;
      }
      const now = this.clock.now();
      const heartbeatAt = this.lastAcceptedAt + (this.opts.heartbeatMs ?? 60_000);
      const batchAt = this.firstChangeAt !== undefined ? this.firstChangeAt + (this.opts.batchMs ?? 1_000) : Infinity;
      const full = this.changes.size >= this.maxItems;
      if (!full && now < Math.min(heartbeatAt, batchAt)) {
        await this.idle(Math.min(heartbeatAt, batchAt) - now);
        continue;
      }
      const items = this.changes.take(this.maxItems, this.maxBytes);
      this.firstChangeAt = this.changes.size ? this.clock.now() : undefined;
      this.opts.metrics?.pendingChanges(this.changes.size);
      await this.send(this.report('delta', items));
    }
  }

  /** A new epoch: every cached Secret, in reports of at most maxItems. */
  private async snapshot(): Promise<void> {
    const reason = this.resyncReason ?? 'start';
    this.resyncReason = undefined;
    this.changes.clear();
    this.firstChangeAt = undefined;
    this.epoch = randomUUID();
    this.seq = 0;
    this.stats.snapshots++;
    this.opts.metrics?.resync(reason);
    // keys now, facts when each report is built: a Secret changed or deleted meanwhile is also a delta after it
    const keys = this.opts.secrets.list().map((s) => [s.metadata.namespace, s.metadata.name] as const);
    this.opts.metrics?.certificates(keys.length);
    this.opts.log.info({ epoch: this.epoch, reason, certificates: keys.length }, 'inventory snapshot');
    const secrets = this.opts.secrets;
    const facts = function* (self: InventoryReporter) {
      for (const [ns, name] of keys) {
        const s = secrets.get(name, ns);
        if (s) yield self.factsOf(s);
      }
    };
    const reports = packReports(facts(this), this.maxItems, this.maxBytes, jsonSize);
    // one report ahead, to know which one is final
    let next = reports.next();
    for (let first = true; !next.done; first = false) {
      const upserts = next.value;
      next = reports.next();
      if (!(await this.send(this.report('snapshot', { upserts, deletes: [] }, next.done === true), first))) return;
      if (this.resyncReason !== undefined) return;
    }
  }

  /**
   * Sends one report; true once the hub applied it. Otherwise a resync is due (`resyncReason` set) and false.
   * `untilAnswered`: the first report of an epoch is retried until the hub answers (nothing to lose: it starts
   * a new epoch anyway); any other report is tried twice, then the gap is healed by a new snapshot.
   */
  private async send(report: InventoryReport, untilAnswered = false): Promise<boolean> {
    let throttledLogged = false;
    for (let attempt = 1; !this.stopped; attempt++) {
      this.stats.reports++;
      const out = await this.opts.client.post(report, this.abort.signal);
      if (this.stopped) return false;
      this.opts.metrics?.report(report.kind, out.kind);
      switch (out.kind) {
        case 'applied':
        case 'duplicate':
          this.lastAcceptedAt = this.clock.now();
          if (this.unsupportedLogged) this.opts.log.info('the hub accepts inventory reports now');
          this.unsupportedLogged = false;
          if (!this.acceptedOnce) {
            this.acceptedOnce = true;
            this.acceptedResolve();
            this.opts.log.info({ epoch: report.epoch, seq: report.seq }, 'the hub accepted the first inventory report');
          }
          return true;
        case 'resync':
          this.opts.log.info({ epoch: report.epoch, seq: report.seq, message: out.message }, 'the hub asks for a full inventory resync');
          this.resyncReason = 'resync-required';
          return false;
        case 'unsupported':
          if (!this.unsupportedLogged)
            this.opts.log.warn(
              { retryInMs: this.opts.unsupportedRetryMs ?? 300_000 },
              'the hub does not accept inventory reports (404 on POST /v1/inventory: an older hub?); asking again later',
            );
          this.unsupportedLogged = true;
          await sleep(this.clock, this.opts.unsupportedRetryMs ?? 300_000, this.abort.signal);
          this.resyncReason = 'unsupported';
          return false;
        case 'rejected':
          // too large: smaller reports from now on; else a bug on one side or the other: say so, wait, start over
          if (out.status === 413) this.maxBytes = Math.max(1024, Math.floor(this.maxBytes / 2));
          this.stats.failures++;
          this.opts.log.error(
            { status: out.status, error: out.message, kind: report.kind, seq: report.seq },
            'the hub rejected an inventory report',
          );
          await sleep(this.clock, (this.opts.backoff ?? DEFAULT_BACKOFF).maxMs, this.abort.signal);
          this.resyncReason = 'rejected';
          return false;
        case 'throttled': {
          this.stats.throttled++;
          const delay = Math.max(backoffDelay(attempt, this.opts.backoff ?? DEFAULT_BACKOFF), out.retryAfterMs ?? 0);
          // once per report: a quota stays exceeded until someone raises it or removes clusters/certificates
          if (!throttledLogged)
            this.opts.log.warn(
              { code: out.code, error: out.message, kind: report.kind, seq: report.seq, retryInMs: delay },
              'the hub refused an inventory report for now (429); sending the same report again later',
            );
          throttledLogged = true;
          await sleep(this.clock, delay, this.abort.signal);
          attempt = Math.min(attempt, 16); // the backoff is capped anyway; keep the counter small
          break;
        }
        case 'retry': {
          this.stats.failures++;
          const delay = Math.max(backoffDelay(attempt, this.opts.backoff ?? DEFAULT_BACKOFF), out.retryAfterMs ?? 0);
          this.opts.log.warn(
            { error: out.reason, kind: report.kind, seq: report.seq, attempt, retryInMs: delay },
            'inventory report failed; retrying',
          );
          if (attempt >= 2 && !untilAnswered) {
            // the hub may have lost or half-applied what it had: a new epoch heals whatever it was
            await sleep(this.clock, delay, this.abort.signal);
            this.resyncReason = 'gap';
            return false;
          }
          await sleep(this.clock, delay, this.abort.signal);
        }
      }
    }
    return false;
  }
}
