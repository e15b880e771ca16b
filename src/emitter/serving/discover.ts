/**
 * Discovery of served endpoints (docs/serving.md): which host is served with which TLS Secret, and where to
 * connect to see what it serves. Pure: the informers (informers.ts) cache the facts `ingressFacts` and
 * `gatewayFacts` keep of an Ingress or a Gateway, and `ingressEndpoints` / `gatewayEndpoints` turn them into
 * endpoints.
 *
 * Rules:
 * - Ingress: every host of every spec.tls[] entry with a secretName. An entry without hosts names no server, so
 *   it gives no endpoint. A wildcard host (`*.example.com`) is no server name to send: it is probed as each
 *   spec.rules[].host it covers (one label), and is listed as not probed when it covers none.
 * - Gateway: every listener of protocol HTTPS or TLS in mode Terminate with a hostname and a certificateRef to a
 *   Secret (the first one: more than one is implementation-specific). A wildcard hostname is listed as not
 *   probed; a listener without a hostname gives no endpoint.
 * - Address: the `notify.certmgr.io/probe-address` annotation (`<host>:<port>`; an invalid one is reported, not
 *   replaced), else the first load balancer address (Ingress: status.loadBalancer.ingress[], port 443; Gateway:
 *   status.addresses[], the listener's port), else none (not probed, with the reason).
 * - At most MAX_HOSTS_PER_OBJECT hosts per object are kept (the facts count the rest in `cut`).
 *
 * Memory: values many objects hold alike (namespaces, load balancer and probe addresses, reasons) are interned;
 * hosts, Secret names and object names are mostly one per object and are not (they would only crowd the shared
 * table, intern.ts). An endpoint's host is the facts' string, not a copy.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { SERVING_LIMITS, type ServingSource } from '../../model/serving.js';
import { intern } from '../intern.js';
import type { Endpoint } from './types.js';

export const PROBE_ADDRESS_ANNOTATION = 'notify.certmgr.io/probe-address';
/** hosts (Ingress) or listeners (Gateway) kept per object; the rest are cut and counted */
export const MAX_HOSTS_PER_OBJECT = 64;
/** the port of an Ingress's load balancer address (HTTPS) */
const INGRESS_PORT = 443;
/** a bad value quoted in a reason: this many code points */
const QUOTED = 64;
/** longer raw strings are cut in the facts: anything longer than a DNS name is invalid anyway */
const KEPT = SERVING_LIMITS.host + 1;

/** The fields of an object's metadata the informer cache and the index read. */
export interface ServingObjectMeta {
  name: string;
  namespace: string;
  uid?: string;
  resourceVersion?: string;
}

export interface IngressTlsFacts {
  hosts: readonly string[];
  secretName: string;
}

/** An Ingress as cached: what discovery reads, nothing else. */
export interface IngressFacts {
  metadata: ServingObjectMeta;
  /** the notify.certmgr.io/probe-address annotation, as given (cut) */
  probeAddress?: string | undefined;
  /** spec.tls[] entries with a secretName */
  tls: readonly IngressTlsFacts[];
  /** spec.rules[].host, kept only when a tls host is a wildcard (the names probed for it) */
  ruleHosts?: readonly string[] | undefined;
  /** the first status.loadBalancer.ingress[] ip or hostname */
  lbAddress?: string | undefined;
  /** hosts beyond MAX_HOSTS_PER_OBJECT, not kept */
  cut?: number | undefined;
}

export interface GatewayListenerFacts {
  /** absent: the listener matches every name (no endpoint) */
  hostname?: string | undefined;
  port: number;
  secret: { namespace: string; name: string };
}

/** A Gateway as cached: its terminating TLS listeners with a Secret, and its first address. */
export interface GatewayFacts {
  metadata: ServingObjectMeta;
  probeAddress?: string | undefined;
  listeners: readonly GatewayListenerFacts[];
  /** the first status.addresses[] value of type IPAddress or Hostname */
  address?: string | undefined;
  /** listeners beyond MAX_HOSTS_PER_OBJECT, not kept */
  cut?: number | undefined;
}

/** Raw objects as the apiserver's JSON has them (only what is read; any field may be missing or hostile). */
export interface RawObject {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: unknown;
  status?: unknown;
}

// ---------------------------------------------------------------------------
// validation

const LABEL = '[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?';
const DNS_NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);

/** A DNS name as SNI takes it (lower case, at most 253 characters); IPv4 literals pass too. */
function isDnsName(s: string): boolean {
  return s.length > 0 && s.length <= SERVING_LIMITS.host && DNS_NAME.test(s);
}

/** `*.` and a DNS name */
const isWildcard = (s: string): boolean => s.startsWith('*.') && isDnsName(s.slice(2));

/** A Kubernetes object name (DNS subdomain), as a Secret's name is. */
const isObjectName = (s: string): boolean => isDnsName(s);

/** `"value"` cut to QUOTED code points, JSON-escaped (control characters and quotes are visible, not acted on). */
function quote(s: string): string {
  const cps = Array.from(s);
  return JSON.stringify(cps.length > QUOTED ? `${cps.slice(0, QUOTED).join('')}…` : s);
}

const cut = (s: string, n: number): string => (s.length > n ? s.slice(0, n) : s);

const bound = (reason: string): string => {
  const cps = Array.from(reason);
  return cps.length > SERVING_LIMITS.reason ? `${cps.slice(0, SERVING_LIMITS.reason - 1).join('')}…` : reason;
};

/** `<host>:<port>` of a host (DNS name or IP address) and port, IPv6 in brackets; undefined when invalid. */
function formatAddress(host: string, port: number): string | undefined {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  if (isIPv6(host)) return `[${host.toLowerCase()}]:${port}`;
  const h = host.toLowerCase();
  return isIPv4(h) || isDnsName(h) ? `${h}:${port}` : undefined;
}

/**
 * The probe-address annotation's value as an address (`<host>:<port>`: a DNS name, an IPv4 address or `[IPv6]`,
 * port 1–65535), or the reason it is not one.
 */
export function parseProbeAddress(v: string): { address: string } | { reason: string } {
  const bad = (why: string): { reason: string } => ({
    reason: bound(
      `invalid ${PROBE_ADDRESS_ANNOTATION} annotation ${quote(v)}: ${why}; expected <host>:<port> (a DNS name, an IPv4 address or [IPv6], port 1-65535)`,
    ),
  });
  if (v.length > SERVING_LIMITS.address) return bad(`longer than ${SERVING_LIMITS.address} characters`);
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):(\d{1,5})$/.exec(v);
  if (!m) return bad('not <host>:<port>');
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return bad(`port ${m[3]} out of range`);
  if (m[1] !== undefined) {
    if (!isIPv6(m[1])) return bad(`[${m[1]}] is not an IPv6 address`);
    return { address: `[${m[1].toLowerCase()}]:${port}` };
  }
  const host = m[2]!.toLowerCase();
  if (!isIPv4(host) && !isDnsName(host)) return bad('the host is not a DNS name or an IP address');
  return { address: `${host}:${port}` };
}

// ---------------------------------------------------------------------------
// transforms (informer: raw object → facts)

const obj = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function metaOf(raw: RawObject): { meta: ServingObjectMeta; probeAddress: string | undefined } {
  const md = obj(raw.metadata) ?? {};
  const meta: ServingObjectMeta = {
    name: String(md['name'] ?? ''),
    namespace: intern(String(md['namespace'] ?? '')),
  };
  if (typeof md['uid'] === 'string') meta.uid = md['uid'];
  if (typeof md['resourceVersion'] === 'string') meta.resourceVersion = md['resourceVersion'];
  const a = str(obj(md['annotations'])?.[PROBE_ADDRESS_ANNOTATION]);
  // longer than any valid address: kept long enough to be reported as too long
  return { meta, probeAddress: a !== undefined ? intern(cut(a, SERVING_LIMITS.address + 1)) : undefined };
}

/** The informer's transform of an Ingress (networking.k8s.io/v1). */
export function ingressFacts(raw: RawObject): IngressFacts {
  const { meta, probeAddress } = metaOf(raw);
  const spec = obj(raw.spec) ?? {};
  const tls: IngressTlsFacts[] = [];
  let kept = 0;
  let cutCount = 0;
  let wildcard = false;
  for (const e of arr(spec['tls'])) {
    const entry = obj(e);
    const secretName = str(entry?.['secretName']);
    if (!entry || secretName === undefined) continue;
    const hosts: string[] = [];
    for (const h of arr(entry['hosts'])) {
      if (typeof h !== 'string' || h === '') continue;
      if (kept >= MAX_HOSTS_PER_OBJECT) {
        cutCount++;
        continue;
      }
      kept++;
      if (h.startsWith('*.')) wildcard = true;
      hosts.push(cut(h, KEPT));
    }
    tls.push({ hosts: hosts.slice(), secretName: cut(secretName, KEPT) });
  }
  let ruleHosts: string[] | undefined;
  if (wildcard) {
    ruleHosts = [];
    for (const r of arr(spec['rules'])) {
      const h = str(obj(r)?.['host']);
      if (h !== undefined && !h.startsWith('*') && ruleHosts.length < MAX_HOSTS_PER_OBJECT) ruleHosts.push(cut(h, KEPT));
    }
    ruleHosts = ruleHosts.slice();
  }
  let lbAddress: string | undefined;
  for (const i of arr(obj(obj(raw.status)?.['loadBalancer'])?.['ingress'])) {
    const v = str(obj(i)?.['ip']) ?? str(obj(i)?.['hostname']);
    if (v !== undefined) {
      lbAddress = intern(cut(v, KEPT));
      break;
    }
  }
  return { metadata: meta, probeAddress, tls: tls.slice(), ruleHosts, lbAddress, cut: cutCount || undefined };
}

/** The first certificateRef of a listener that names a Secret (kind Secret, core group), or undefined. */
function secretRefOf(refs: unknown, gatewayNamespace: string): { namespace: string; name: string } | undefined {
  for (const r of arr(refs)) {
    const ref = obj(r);
    const name = str(ref?.['name']);
    if (!ref || name === undefined) continue;
    const kind = ref['kind'] ?? 'Secret';
    const group = ref['group'] ?? '';
    if (kind !== 'Secret' || (group !== '' && group !== 'core')) continue;
    const ns = str(ref['namespace']) ?? gatewayNamespace;
    return Object.freeze({ namespace: intern(cut(ns, KEPT)), name: cut(name, KEPT) });
  }
  return undefined;
}

/** The informer's transform of a Gateway (gateway.networking.k8s.io v1 or v1beta1). */
export function gatewayFacts(raw: RawObject): GatewayFacts {
  const { meta, probeAddress } = metaOf(raw);
  const listeners: GatewayListenerFacts[] = [];
  let cutCount = 0;
  for (const l of arr(obj(raw.spec)?.['listeners'])) {
    const listener = obj(l);
    if (!listener) continue;
    const protocol = listener['protocol'];
    if (protocol !== 'HTTPS' && protocol !== 'TLS') continue;
    const tls = obj(listener['tls']);
    if ((tls?.['mode'] ?? 'Terminate') !== 'Terminate') continue;
    const secret = secretRefOf(tls?.['certificateRefs'], meta.namespace);
    const port = listener['port'];
    if (!secret || typeof port !== 'number') continue;
    if (listeners.length >= MAX_HOSTS_PER_OBJECT) {
      cutCount++;
      continue;
    }
    const hostname = str(listener['hostname']);
    listeners.push({ hostname: hostname !== undefined ? cut(hostname, KEPT) : undefined, port, secret });
  }
  let address: string | undefined;
  for (const a of arr(obj(raw.status)?.['addresses'])) {
    const type = obj(a)?.['type'] ?? 'IPAddress';
    const v = str(obj(a)?.['value']);
    if ((type === 'IPAddress' || type === 'Hostname') && v !== undefined) {
      address = intern(cut(v, KEPT));
      break;
    }
  }
  return { metadata: meta, probeAddress, listeners: listeners.slice(), address, cut: cutCount || undefined };
}

// ---------------------------------------------------------------------------
// endpoints

/** A host as the index and the inventory hold it: lower case, cut to the limit. */
const hostOf = (h: string): string => {
  const l = h.toLowerCase(); // the same string when it is already lower case
  return l.length <= SERVING_LIMITS.host ? l : Array.from(l).slice(0, SERVING_LIMITS.host).join('');
};

/** Does `wildcard` (`*.example.com`) cover `host` (exactly one more label)? */
function covers(wildcard: string, host: string): boolean {
  const suffix = wildcard.slice(1); // .example.com
  if (!host.endsWith(suffix)) return false;
  const label = host.slice(0, host.length - suffix.length);
  return label.length > 0 && !label.includes('.');
}

type Address = { address: string } | { reason: string };

function endpoint(host: string, at: Address, source: ServingSource, secret: Endpoint['secret']): Endpoint {
  return 'address' in at
    ? { host: hostOf(host), address: intern(at.address), source, secret }
    : { host: hostOf(host), address: null, reason: intern(at.reason), source, secret };
}

/** The annotation's address, the fallback's, or the reason there is none. */
function addressOf(probeAddress: string | undefined, fallback: () => Address): Address {
  return probeAddress !== undefined ? parseProbeAddress(probeAddress) : fallback();
}

/** The endpoints of an Ingress (see the rules above). */
export function ingressEndpoints(ing: IngressFacts): Endpoint[] {
  const md = ing.metadata;
  const source: ServingSource = Object.freeze({ kind: 'Ingress', namespace: md.namespace, name: md.name });
  const at = addressOf(ing.probeAddress, () => {
    if (ing.lbAddress === undefined)
      return {
        reason: `no address: the Ingress has no load balancer address (status.loadBalancer.ingress) and no ${PROBE_ADDRESS_ANNOTATION} annotation`,
      };
    const a = formatAddress(ing.lbAddress, INGRESS_PORT);
    return a !== undefined
      ? { address: a }
      : { reason: bound(`no address: the Ingress's load balancer address ${quote(ing.lbAddress)} is not a DNS name or an IP address`) };
  });
  const out: Endpoint[] = [];
  /** `<host>\n<secretName>`: a host listed twice for one Secret is one endpoint */
  const seen = new Set<string>();
  for (const entry of ing.tls) {
    if (!isObjectName(entry.secretName)) continue; // names no Secret that can exist
    const secret = Object.freeze({ namespace: md.namespace, name: entry.secretName });
    const add = (host: string, a: Address): void => {
      const e = endpoint(host, a, source, secret);
      const key = `${e.host}\n${entry.secretName}`;
      if (seen.has(key)) return;
      seen.add(key);
      out.push(e);
    };
    for (const raw of entry.hosts) {
      const h = raw.toLowerCase();
      if (isDnsName(h)) add(h, at);
      else if (isWildcard(h)) {
        const under = (ing.ruleHosts ?? []).map((r) => r.toLowerCase()).filter((r) => isDnsName(r) && covers(h, r));
        if (under.length) under.forEach((r) => add(r, at));
        else add(h, { reason: `wildcard host ${h}: no server name to probe (no spec.rules[].host under it)` });
      } else add(raw, { reason: bound(`spec.tls host ${quote(raw)} is not a DNS name`) });
    }
  }
  return out;
}

/** The endpoints of a Gateway (see the rules above). */
export function gatewayEndpoints(gw: GatewayFacts): Endpoint[] {
  const md = gw.metadata;
  const source: ServingSource = Object.freeze({ kind: 'Gateway', namespace: md.namespace, name: md.name });
  const out: Endpoint[] = [];
  const seen = new Set<string>();
  for (const l of gw.listeners) {
    if (l.hostname === undefined || !isObjectName(l.secret.name) || !isObjectName(l.secret.namespace)) continue;
    const h = l.hostname.toLowerCase();
    let at: Address;
    if (isWildcard(h)) at = { reason: `wildcard hostname ${h}: no server name to probe` };
    else if (!isDnsName(h)) at = { reason: bound(`listener hostname ${quote(l.hostname)} is not a DNS name`) };
    else
      at = addressOf(gw.probeAddress, () => {
        if (gw.address === undefined)
          return { reason: `no address: the Gateway has no status.addresses and no ${PROBE_ADDRESS_ANNOTATION} annotation` };
        const a = formatAddress(gw.address, l.port);
        return a !== undefined
          ? { address: a }
          : { reason: bound(`no address: the Gateway's address ${quote(gw.address)} with port ${l.port} is not a valid address`) };
      });
    const e = endpoint(l.hostname, at, source, l.secret);
    // two listeners of one hostname and Secret (ports 443 and 8443): both are endpoints, told apart by address
    const key = `${e.host}\n${e.address}\n${l.secret.namespace}/${l.secret.name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(e);
  }
  return out;
}
