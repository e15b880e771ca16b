/**
 * The thin I/O shell around `dueExpirations`: TLS Secrets (an informer on type kubernetes.io/tls) feed a keyed
 * workqueue (`<namespace>/<name>`). A reconcile parses the leaf of `tls.crt`, reads the monitoring
 * configuration (cached briefly; re-read at every scan), decides, sends the event and waits for the 202, then
 * records the marks durably. Every Secret is looked at again each `scanIntervalMs` (and when the next
 * threshold is crossed, when the Secret or its Certificate changes, or when the configuration changes).
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ResilientInformer } from '../../kube/informer.js';
import { Controller } from '../../runtime/controller.js';
import { keyOf, objectKey, parseKey } from '../../runtime/keys.js';
import type { ReconcileMetrics } from '../../runtime/metrics.js';
import type { Result } from '../../runtime/workqueue.js';
import { realClock, type BackoffPolicy, type Clock } from '../../runtime/timers.js';
import type { KeyedState } from '../state.js';
import type { EventSink } from '../../client/events.js';
import type { CertManagerObject } from '../health/observe.js';
import type { MonitoringConfigSource } from '../../client/monitoring.js';
import type { MonitoringConfigInput } from '../../model/monitoring.js';
import { applicationIdsOf, dueExpirations, expirationEvent, type ExpiryCertificate, type ExpiryState } from './due.js';
import { parseLeafCertificate } from './x509.js';

export const TLS_SECRET_TYPE = 'kubernetes.io/tls';
const CERTIFICATE_NAME_ANNOTATION = 'cert-manager.io/certificate-name';

/** The TLS Secret informer's transform: only what the expiry part reads (metadata, type, `tls.crt`). Private keys never reach the cache. */
export function stripSecret(s: V1Secret): V1Secret {
  const crt = s.data?.['tls.crt'];
  return {
    apiVersion: s.apiVersion,
    kind: s.kind,
    metadata: s.metadata,
    type: s.type,
    data: crt !== undefined ? { 'tls.crt': crt } : {},
  } as V1Secret;
}

export interface ExpiryMetrics {
  scanned(outcome: 'emitted' | 'disabled' | 'unmonitored' | 'none-crossed' | 'no-certificate'): void;
}

export interface ExpiryControllerOptions {
  secrets: ResilientInformer<V1Secret>;
  /** cert-manager Certificates (application ids on the Certificate); optional */
  certificates?: ResilientInformer<CertManagerObject>;
  config: MonitoringConfigSource;
  state: KeyedState<ExpiryState>;
  sink: EventSink;
  cluster: { name: string };
  log: Logger;
  clock?: Clock;
  /** default 1 h */
  scanIntervalMs?: number;
  /** the configuration is polled this often; a change re-evaluates every Secret. Default 60 s */
  configPollMs?: number;
  concurrency?: number;
  backoff?: BackoffPolicy;
  metrics?: ExpiryMetrics;
  /** reconcile metrics (controller="expiry") */
  reconcileMetrics?: ReconcileMetrics;
}

/**
 * The scan is the Controller's resync (every `scanIntervalMs`: fresh configuration, then every Secret); the
 * configuration poll is a timer of its own that enqueues everything only when the configuration changed.
 */
export class ExpiryController {
  private readonly controller: Controller;
  private readonly clock: Clock;
  private pollTimer: unknown;
  private lastConfig: string | undefined;
  private started = false;
  private stopped = false;

  constructor(private readonly opts: ExpiryControllerOptions) {
    this.clock = opts.clock ?? realClock;
    this.controller = new Controller({
      name: 'expiry',
      reconcile: (key) => this.reconcile(key),
      keys: () => this.keys(),
      resyncMs: this.scanIntervalMs,
      onResync: () => this.refreshConfig(),
      concurrency: opts.concurrency ?? 8,
      backoff: opts.backoff ?? { baseMs: 500, maxMs: 5 * 60_000, jitter: 0.1 },
      clock: this.clock,
      log: opts.log,
      ...(opts.reconcileMetrics ? { metrics: opts.reconcileMetrics } : {}),
    });
    const enqueue = (s: V1Secret): void => this.controller.enqueue(keyOf(s));
    opts.secrets.on('add', enqueue);
    opts.secrets.on('update', enqueue);
    opts.secrets.on('delete', enqueue);
    opts.secrets.onList(() => {
      if (this.started) this.controller.enqueueAll();
    });
    // application ids may come from the Certificate
    const fromCert = (c: CertManagerObject): void => {
      const ns = c.metadata?.namespace;
      const secretName = c.spec?.secretName;
      if (ns && typeof secretName === 'string' && secretName) this.controller.enqueue(objectKey(ns, secretName));
    };
    opts.certificates?.on('add', fromCert);
    opts.certificates?.on('update', fromCert);
  }

  get queue(): Controller['queue'] {
    return this.controller.queue;
  }

  get scanIntervalMs(): number {
    return this.opts.scanIntervalMs ?? 60 * 60_000;
  }

  keys(): string[] {
    const keys = new Set<string>(this.opts.state.keys());
    for (const s of this.opts.secrets.list()) keys.add(keyOf(s));
    return [...keys];
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.controller.start();
    void this.controller.resync();
    this.pollTimer = this.clock.setTimeout(() => void this.poll(), this.opts.configPollMs ?? 60_000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer !== undefined) this.clock.clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    await this.controller.stop();
  }

  /** Before every scan: a fresh configuration (the reconciles read it again, and retry, when this fails). */
  private async refreshConfig(): Promise<void> {
    try {
      this.noteConfig(await this.opts.config.get(0));
    } catch (e) {
      this.opts.log.warn({ error: e instanceof Error ? e.message : String(e) }, 'could not read the monitoring configuration for the scan');
    }
  }

  private noteConfig(cfg: MonitoringConfigInput): boolean {
    const s = JSON.stringify(cfg);
    const changed = this.lastConfig !== undefined && this.lastConfig !== s;
    this.lastConfig = s;
    return changed;
  }

  private async poll(): Promise<void> {
    if (this.stopped) return;
    try {
      if (this.noteConfig(await this.opts.config.get(0))) {
        this.opts.log.info('monitoring configuration changed; re-evaluating every certificate');
        this.controller.enqueueAll();
      }
    } catch (e) {
      this.opts.log.warn({ error: e instanceof Error ? e.message : String(e) }, 'could not poll the monitoring configuration');
    }
    if (!this.stopped) this.pollTimer = this.clock.setTimeout(() => void this.poll(), this.opts.configPollMs ?? 60_000);
  }

  async reconcile(key: string): Promise<Result | void> {
    const { namespace = '', name } = parseKey(key);
    const secret = this.opts.secrets.get(name, namespace);
    if (!secret || secret.type !== TLS_SECRET_TYPE) {
      await this.opts.state.set(key, undefined);
      return;
    }
    const b64 = secret.data?.['tls.crt'];
    const leaf = b64 ? parseLeafCertificate(Buffer.from(b64, 'base64')) : undefined;
    if (!leaf) {
      // not issued yet, or being replaced: keep the marks (the same serial coming back must not re-alert)
      this.opts.metrics?.scanned('no-certificate');
      return;
    }
    const config = await this.opts.config.get();
    const certificateName = secret.metadata?.annotations?.[CERTIFICATE_NAME_ANNOTATION];
    const certificate = certificateName ? this.opts.certificates?.get(certificateName, namespace) : undefined;
    const cert: ExpiryCertificate = {
      namespace,
      secretName: name,
      ...(certificateName ? { certificateName } : {}),
      leaf,
      applicationIds: applicationIdsOf(secret.metadata?.annotations, certificate),
    };
    const now = this.clock.now();
    const d = dueExpirations(cert, config, this.opts.state.get(key), now);
    if (d.due) {
      const event = expirationEvent(cert, d.due, now, this.opts.cluster);
      await this.opts.sink.send([event]);
      this.opts.log.info(
        { key, ruleId: d.due.ruleId, threshold: d.due.threshold, daysLeft: d.due.daysLeft, serial: leaf.serialNumber },
        'expiration event accepted by the service',
      );
    }
    this.opts.metrics?.scanned(d.due ? 'emitted' : (d.skipped ?? 'none-crossed'));
    await this.opts.state.set(key, d.next);
    if (d.recheckAt !== undefined) return { requeueAfter: Math.min(Math.max(0, d.recheckAt - this.clock.now()), this.scanIntervalMs) };
  }
}
