/**
 * The emitter's informers: cert-manager Issuers, ClusterIssuers and Certificates (health; Certificates also
 * carry application ids for the inventory) and TLS Secrets (inventory; filtered by type on the server, parsed
 * into facts before caching: no certificate bytes, no key).
 */
import type { CoreV1Api, KubeConfig, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { SECRETS, collectionPath, type KubeClient, type ResourceRef } from '../kube/client.js';
import { ResilientInformer, type ListPage } from '../kube/informer.js';
import type { BackoffPolicy, Clock } from '../runtime/timers.js';
import { HEALTH_KINDS, type CertManagerCondition, type CertManagerObject, type HealthKind } from './health/observe.js';
import { TLS_SECRET_TYPE, READ_TLS_DATA, tlsSecretFacts, type TlsSecretFacts } from './inventory/facts.js';
import { intern, lastBuilt, share, toMillis } from './intern.js';

const CERT_MANAGER: Record<HealthKind, ResourceRef> = {
  Issuer: { group: 'cert-manager.io', version: 'v1', plural: 'issuers', kind: 'Issuer', namespaced: true },
  ClusterIssuer: { group: 'cert-manager.io', version: 'v1', plural: 'clusterissuers', kind: 'ClusterIssuer', namespaced: false },
  Certificate: { group: 'cert-manager.io', version: 'v1', plural: 'certificates', kind: 'Certificate', namespaced: true },
};

export interface EmitterInformers {
  /** per kind; all three with health, only Certificate with the inventory alone */
  cm: Partial<Record<HealthKind, ResilientInformer<CertManagerObject>>>;
  /** inventory: TLS Secrets as parsed facts (no certificate bytes, no key) */
  facts: ResilientInformer<TlsSecretFacts, V1Secret> | undefined;
  all: ResilientInformer<never>[];
}

/** What every informer of the emitter shares: the client's config, log, clock, backoff, page size and page metric. */
export function informerBase(
  name: string,
  o: {
    kc: KubeConfig;
    log: Logger;
    clock: Clock;
    backoff?: BackoffPolicy | undefined;
    pageSize?: number | undefined;
    onListPage?: ((informer: string) => void) | undefined;
  },
) {
  const { onListPage } = o;
  return {
    name,
    kc: o.kc,
    log: o.log,
    clock: o.clock,
    backoff: o.backoff,
    // 0: the informer's default
    pageSize: o.pageSize || undefined,
    onListPage: onListPage && (() => onListPage(name)),
  };
}

export function emitterInformers(o: {
  kc: KubeConfig;
  kube: KubeClient;
  core: CoreV1Api;
  /** watch only this namespace (ClusterIssuers are cluster-scoped) */
  namespace: string | undefined;
  health: boolean;
  inventory: boolean;
  log: Logger;
  clock: Clock;
  backoff?: BackoffPolicy | undefined;
  /** LIST page size; default 1000 */
  pageSize?: number | undefined;
  /** every LIST page read, by informer (a metric) */
  onListPage?: ((informer: string) => void) | undefined;
}): EmitterInformers {
  const ns = o.namespace;
  const all: ResilientInformer<never>[] = [];
  const common = (name: string) => informerBase(name, o);
  const cmInformer = (kind: HealthKind): ResilientInformer<CertManagerObject> => {
    const r = CERT_MANAGER[kind];
    // health is judged on transitions: after a failed watch, relist rather than replay what happened while blind
    // (a flap that ended where it started is then not reported, whether or not etcd was compacted meanwhile)
    const inf = new ResilientInformer<CertManagerObject>({
      ...common(r.plural),
      path: collectionPath(r, ns),
      list: (page, each) => o.kube.list<CertManagerObject>(r, ns, page, each),
      streamed: true,
      relistByMetadata: {
        list: (page, each) => o.kube.listMetadata(r, ns, page, undefined, each),
        get: (name, namespace) => o.kube.getJson<CertManagerObject>(r, name, namespace),
      },
      relistAfterError: true,
      transform: certManagerFacts,
    });
    all.push(inf as unknown as ResilientInformer<never>);
    return inf;
  };
  const cm: EmitterInformers['cm'] = {};
  if (o.health) for (const k of HEALTH_KINDS) cm[k] = cmInformer(k);
  else if (o.inventory) cm.Certificate = cmInformer('Certificate'); // application ids on Certificates
  const fieldSelector = `type=${TLS_SECRET_TYPE}`;
  let facts: ResilientInformer<TlsSecretFacts, V1Secret> | undefined;
  if (o.inventory) {
    facts = new ResilientInformer<TlsSecretFacts, V1Secret>({
      ...common('tls-secret-facts'),
      path: collectionPath(SECRETS, ns),
      list: (page: ListPage, each) => o.kube.listSecrets(ns, page, fieldSelector, READ_TLS_DATA, each),
      streamed: true,
      relistByMetadata: {
        list: (page, each) => o.kube.listMetadata(SECRETS, ns, page, fieldSelector, each),
        // the field selector's filter, for a Secret deleted and created again as another type since the list
        get: async (name, namespace) => {
          const s = await o.kube.getSecretJson(namespace, name, READ_TLS_DATA);
          return s?.type === TLS_SECRET_TYPE ? s : undefined;
        },
      },
      fieldSelector,
      transform: tlsSecretFacts,
    });
    all.push(facts as unknown as ResilientInformer<never>);
  }
  return { cm, facts, all };
}

/** Annotations the emitter reads on cert-manager objects (policy.ts, inventory/facts.ts): all under this prefix. */
const NOTIFY_ANNOTATION_PREFIX = 'notify.certmgr.io/';
/** Conditions observe() and the inventory read; cert-manager's others are not kept. */
const KEPT_CONDITIONS = new Set(['Ready', 'Issuing']);

function notifyAnnotations(a: Record<string, string> | undefined): Readonly<Record<string, string>> | undefined {
  if (!a) return undefined;
  let out: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(a)) if (k.startsWith(NOTIFY_ANNOTATION_PREFIX)) (out ??= {})[k] = v;
  return out && share(out);
}

/**
 * The strings of a list, in an array of exactly their number: one built by push or filter keeps spare room, and a
 * Certificate and its Secret each hold one.
 */
const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string').slice() : undefined;
const iso = (ms: number): string => new Date(ms).toISOString();

type Spec = NonNullable<CertManagerObject['spec']>;
type Status = NonNullable<CertManagerObject['status']>;

/**
 * The cached form of an Issuer, ClusterIssuer or Certificate: one flat object of the fields observe() (health),
 * policy.ts and the inventory (facts.ts, reporter.ts) read, nothing else. A Certificate as the apiserver sends it
 * is several KiB (managedFields, kubectl's last-applied copy, every condition, spec fields nobody here reads);
 * client-node's form of the kept fields is still many small objects. Here: times are numbers, values
 * many objects hold alike (issuerRef, the Ready condition without its time, annotations) are one shared frozen
 * copy, and `metadata`, `spec` and `status` are built when read (a few reads per reconcile or report). At scale
 * that is what bounds the agent's memory.
 */
class CertManagerRecord implements CertManagerObject {
  // as client-node's KubernetesObject has them: optional, set only with a value
  readonly apiVersion?: string;
  readonly kind?: string;

  constructor(
    apiVersion: string | undefined,
    kind: string | undefined,
    private readonly name: string | undefined,
    private readonly namespace: string | undefined,
    private readonly uid: string | undefined,
    private readonly resourceVersion: string | undefined,
    private readonly generation: number | undefined,
    private readonly created: number | undefined,
    private readonly annotations: Readonly<Record<string, string>> | undefined,
    /** undefined: no spec */
    private readonly specFields: Readonly<Spec> | undefined,
    private readonly commonName: string | undefined,
    private readonly dnsNames: readonly string[] | undefined,
    private readonly secretName: string | undefined,
    /** undefined: no status; the Ready condition (if any) without lastTransitionTime */
    private readonly conditions: readonly Readonly<CertManagerCondition>[] | undefined | null,
    private readonly readySince: number | undefined,
    private readonly notAfter: number | undefined,
    private readonly failedIssuanceAttempts: number | undefined,
    private readonly renewalTime: number | undefined,
    private readonly lastFailureTime: number | undefined,
  ) {
    if (apiVersion !== undefined) this.apiVersion = apiVersion;
    if (kind !== undefined) this.kind = kind;
  }

  /**
   * Built when read, frozen, and the last one kept (lastBuilt): client-node's cache reads it three to five times per
   * listed item and the inventory's facts six; a relist of 100,000 objects built ten times as many, each with a Date.
   */
  get metadata(): NonNullable<CertManagerObject['metadata']> {
    return CertManagerRecord.metadataOf(this);
  }

  private static readonly metadataOf = lastBuilt((r: CertManagerRecord) => {
    const md: NonNullable<CertManagerObject['metadata']> = {};
    if (r.name !== undefined) md.name = r.name;
    if (r.namespace !== undefined) md.namespace = r.namespace;
    if (r.uid !== undefined) md.uid = r.uid;
    // ListWatch compares it to tell an update from a relisted copy
    if (r.resourceVersion !== undefined) md.resourceVersion = r.resourceVersion;
    if (r.generation !== undefined) md.generation = r.generation;
    if (r.created !== undefined) md.creationTimestamp = new Date(r.created);
    if (r.annotations) md.annotations = r.annotations;
    return md;
  });

  // spec, status and toJSON, as metadata: a key only with a value, as in the object the record was made of
  get spec(): Spec | undefined {
    if (!this.specFields) return undefined;
    const spec: Spec = {};
    if (this.commonName !== undefined) spec.commonName = this.commonName;
    if (this.dnsNames) spec.dnsNames = this.dnsNames as string[];
    if (this.secretName !== undefined) spec.secretName = this.secretName;
    return Object.assign(spec, this.specFields);
  }

  get status(): Status | undefined {
    if (this.conditions === undefined) return undefined;
    const since = this.readySince;
    const status: Status = {};
    if (this.conditions)
      status.conditions = this.conditions.map((c) =>
        c.type === 'Ready' && since !== undefined ? { ...c, lastTransitionTime: iso(since) } : c,
      );
    if (this.notAfter !== undefined) status.notAfter = iso(this.notAfter);
    if (this.failedIssuanceAttempts !== undefined) status.failedIssuanceAttempts = this.failedIssuanceAttempts;
    if (this.renewalTime !== undefined) status.renewalTime = iso(this.renewalTime);
    if (this.lastFailureTime !== undefined) status.lastFailureTime = iso(this.lastFailureTime);
    return status;
  }

  toJSON(): CertManagerObject {
    const { spec, status } = this;
    const o: CertManagerObject = {};
    if (this.apiVersion !== undefined) o.apiVersion = this.apiVersion;
    if (this.kind !== undefined) o.kind = this.kind;
    o.metadata = this.metadata;
    if (spec) o.spec = spec;
    if (status) o.status = status;
    return o;
  }
}

const NO_SPEC_FIELDS: Readonly<Spec> = Object.freeze({});

/**
 * The informers' transform of an Issuer, ClusterIssuer or Certificate (see CertManagerRecord): the fields the
 * emitter reads, as one flat record.
 */
export function certManagerFacts(o: CertManagerObject): CertManagerObject {
  const md = o.metadata ?? {};
  const spec = o.spec;
  let specFields: Readonly<Spec> | undefined;
  let dnsNames: readonly string[] | undefined;
  let commonName: string | undefined;
  let secretName: string | undefined;
  if (spec) {
    const kept: Spec = {};
    const r = spec.issuerRef;
    if (r && typeof r === 'object') kept.issuerRef = share({ name: r.name, kind: r.kind, group: r.group });
    const templateAnnotations = notifyAnnotations(spec.secretTemplate?.annotations);
    if (templateAnnotations) kept.secretTemplate = share({ annotations: templateAnnotations });
    const sub = spec.subject;
    if (sub && typeof sub === 'object') {
      const subject: NonNullable<Spec['subject']> = {};
      for (const f of ['organizations', 'countries', 'organizationalUnits', 'localities', 'provinces'] as const) {
        const v = strings(sub[f]);
        if (v) subject[f] = v;
      }
      kept.subject = share(subject);
    }
    specFields = Object.keys(kept).length ? share(kept) : NO_SPEC_FIELDS;
    dnsNames = strings(spec.dnsNames);
    if (typeof spec.commonName === 'string')
      // usually also one of the DNS names: one string for both
      commonName = dnsNames?.find((d) => d === spec.commonName) ?? spec.commonName;
    if (typeof spec.secretName === 'string') secretName = spec.secretName;
  }
  const st = o.status;
  let conditions: readonly Readonly<CertManagerCondition>[] | undefined | null;
  let readySince: number | undefined;
  if (st) {
    conditions = null;
    if (Array.isArray(st.conditions))
      conditions = share(
        st.conditions
          .filter((c) => c && typeof c.type === 'string' && KEPT_CONDITIONS.has(c.type))
          .map((c) => {
            if (c.type !== 'Ready') {
              // Issuing: observe() reads its status, and its words while an issuance is in progress or failed
              // (renewal.ts); a recorded success (reason Issued) is just that
              const brief = share({ type: c.type, status: c.status, reason: c.reason });
              if (c.reason === 'Issued') return brief;
              const at = toMillis(c.lastTransitionTime);
              return share({ ...brief, message: c.message, lastTransitionTime: at !== undefined ? iso(at) : undefined });
            }
            const since = toMillis(c.lastTransitionTime);
            if (since !== undefined) readySince = since;
            return share({
              type: c.type,
              status: c.status,
              reason: c.reason,
              message: c.message,
              observedGeneration: c.observedGeneration,
            });
          }),
      );
  }
  return new CertManagerRecord(
    o.apiVersion !== undefined ? intern(o.apiVersion) : undefined,
    o.kind !== undefined ? intern(o.kind) : undefined,
    md.name,
    intern(md.namespace),
    md.uid,
    md.resourceVersion,
    md.generation,
    toMillis(md.creationTimestamp),
    notifyAnnotations(md.annotations),
    specFields,
    commonName,
    dnsNames,
    secretName,
    conditions,
    readySince,
    toMillis(st?.notAfter),
    typeof st?.failedIssuanceAttempts === 'number' ? st.failedIssuanceAttempts : undefined,
    toMillis(st?.renewalTime),
    toMillis(st?.lastFailureTime),
  );
}
