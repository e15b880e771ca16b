/**
 * Egress policy: where the service may connect on behalf of a tenant (webhook, Slack and Teams URLs).
 *
 * The real guard is at connect time: the undici dispatcher of `EgressPolicy.dispatcher()` checks the
 * literal IP, or every address DNS returns for a name, right before the socket is opened, so a name
 * that resolves (or re-resolves: DNS rebinding) to an internal address is refused. `checkUrl` is the
 * early check at create/update (scheme, userinfo, port, literal IPs, metadata names) for a clear error.
 *
 * Denied by default: loopback, unspecified, link-local, private (RFC 1918, ULA, CGNAT), multicast,
 * broadcast, documentation/benchmark and other reserved ranges (IANA special-purpose registries), the
 * IPv4-mapped, NAT64 and 6to4 forms of those, and cloud metadata host names. `--egress-allow` entries
 * (CIDR, IP, host name or `*.domain`) win over the deny-list. Destinations set by the operator with the
 * service's own flags (incident events URL, SMTP URL) do not go through this policy.
 *
 * Node's net.BlockList does the range matching (it also matches IPv4-mapped IPv6 against IPv4 rules).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Counter, type Registry } from 'prom-client';
import { Agent, buildConnector, type Dispatcher } from 'undici';

/** Error code of a refused destination; describeNetworkError and the notifiers classify on it. */
export const EGRESS_DENIED = 'EGRESS_DENIED';

export class EgressDeniedError extends Error {
  readonly code = EGRESS_DENIED;
  /** Which rule refused (e.g. "loopback"); for logs and tests, not for tenants (an internal-DNS oracle). */
  readonly range: string;
  constructor(range: string) {
    super('destination not allowed by the egress policy');
    this.name = 'EgressDeniedError';
    this.range = range;
  }
}

/**
 * Coarse class of a refusal, the `reason` label of certmgr_notify_egress_refused_total: a small fixed set,
 * never the address or host (unbounded, and an internal-DNS oracle in the wrong hands).
 */
export type EgressRefusal = 'invalid_url' | 'scheme' | 'userinfo' | 'port' | 'no_host' | 'denied_address' | 'metadata_host';

/** Where a refusal happened: the early check at create/update, or a send (pre-send URL check or connect). */
export type EgressStage = 'create_update' | 'connect';

/** The class of a deny-range / host refusal (deniedRange, checkHost). */
export function refusalClass(range: string): EgressRefusal {
  return range === METADATA_HOST ? 'metadata_host' : 'denied_address';
}

const METADATA_HOST = 'cloud metadata host';

export interface EgressPolicyOptions {
  /** Called once per refusal (metrics); must not throw. */
  onRefused?: (reason: EgressRefusal, stage: EgressStage) => void;
}

type Family = 'ipv4' | 'ipv6';

/** [range name, CIDR]; the name is what an error reports. Sources: IANA IPv4/IPv6 special-purpose registries. */
const DENIED_RANGES: readonly (readonly [string, string])[] = [
  ['unspecified', '0.0.0.0/8'],
  ['private', '10.0.0.0/8'],
  ['shared address space (CGNAT)', '100.64.0.0/10'],
  ['loopback', '127.0.0.0/8'],
  ['link-local', '169.254.0.0/16'],
  ['private', '172.16.0.0/12'],
  ['reserved', '192.0.0.0/24'],
  ['documentation', '192.0.2.0/24'],
  ['reserved', '192.88.99.0/24'],
  ['private', '192.168.0.0/16'],
  ['reserved', '198.18.0.0/15'],
  ['documentation', '198.51.100.0/24'],
  ['documentation', '203.0.113.0/24'],
  ['multicast', '224.0.0.0/4'],
  ['reserved or broadcast', '240.0.0.0/4'],
  ['unspecified', '::/128'],
  ['loopback', '::1/128'],
  ['reserved', '::/96'], // IPv4-compatible (deprecated)
  ['private', '64:ff9b:1::/48'], // local-use NAT64
  ['reserved', '100::/64'], // discard
  ['reserved', '2001::/23'], // IETF protocol assignments, incl. Teredo
  ['documentation', '2001:db8::/32'],
  ['documentation', '3fff::/20'],
  ['reserved', '5f00::/16'],
  ['private', 'fc00::/7'],
  ['link-local', 'fe80::/10'],
  ['private', 'fec0::/10'], // site-local (deprecated)
  ['multicast', 'ff00::/8'],
];

/** Cloud metadata service names (they resolve to link-local addresses, or via local hosts files). */
const DENIED_NAMES = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.azure.internal',
]);

interface Cidr {
  address: string;
  prefix: number;
  family: Family;
}

function parseCidr(s: string): Cidr | null {
  const [addr, bits, extra] = s.split('/');
  if (addr === undefined || extra !== undefined) return null;
  const v = isIP(addr);
  if (v === 0) return null;
  const max = v === 4 ? 32 : 128;
  if (bits !== undefined && !/^\d{1,3}$/.test(bits)) return null;
  const prefix = bits === undefined ? max : Number(bits);
  if (prefix > max) return null;
  return { address: addr, prefix, family: v === 4 ? 'ipv4' : 'ipv6' };
}

const DENY_LISTS: { name: string; list: BlockList }[] = (() => {
  const byName = new Map<string, BlockList>();
  for (const [name, cidr] of DENIED_RANGES) {
    const c = parseCidr(cidr)!;
    let list = byName.get(name);
    if (!list) byName.set(name, (list = new BlockList()));
    list.addSubnet(c.address, c.prefix, c.family);
  }
  return [...byName].map(([name, list]) => ({ name, list }));
})();

/** The 8 16-bit groups of an IPv6 address (already known to be valid), or null. */
function ipv6Groups(ip: string): number[] | null {
  // A dotted IPv4 tail (::ffff:1.2.3.4) becomes two hex groups first.
  const s = ip.replace(
    /(\d+)\.(\d+)\.(\d+)\.(\d+)$/,
    (_m, a: string, b: string, c: string, d: string) =>
      `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`,
  );
  const [head, rest] = s.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const r = rest ? rest.split(':') : [];
  const fill = rest !== undefined ? 8 - h.length - r.length : 0;
  const groups = [...h, ...Array<string>(Math.max(0, fill)).fill('0'), ...r].map((g) => parseInt(g, 16));
  if (groups.length !== 8 || groups.some((g) => Number.isNaN(g))) return null;
  return groups;
}

function v4FromGroups(hi: number, lo: number): string {
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
}

/**
 * Which deny range holds `ip` (a literal address), or null when it is a public unicast address.
 * IPv6 forms that embed an IPv4 address (mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16)
 * are judged by that IPv4 address. Anything that is not a plain address (zone ids too) is denied.
 */
export function deniedRange(ip: string): string | null {
  const v = isIP(ip);
  if (v === 0) return 'not an IP address';
  if (ip.includes('%')) return 'scoped (zone id)'; // fe80::1%eth0: only meaningful on a local link
  if (v === 6) {
    const g = ipv6Groups(ip);
    if (!g) return 'not an IP address';
    if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return deniedRange(v4FromGroups(g[6]!, g[7]!));
    if (g[0] === 0x2002) return deniedRange(v4FromGroups(g[1]!, g[2]!));
  }
  const family: Family = v === 4 ? 'ipv4' : 'ipv6';
  for (const { name, list } of DENY_LISTS) if (list.check(ip, family)) return name;
  return null;
}

/** A parsed `--egress-allow` list: CIDRs / addresses and host names (`*.example.com` = any subdomain). */
export interface EgressAllow {
  cidrs: readonly string[];
  hosts: readonly string[];
}

const NO_EGRESS_ALLOW: EgressAllow = { cidrs: [], hosts: [] };

const HOST_RE = /^(\*\.)?(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Lower case, without the trailing dot(s) of a fully qualified name. */
function normalizeHost(host: string): string {
  return host.toLowerCase().replace(/\.+$/, '');
}

/** Parses `--egress-allow` entries; throws an Error naming the bad entry. */
export function parseEgressAllow(entries: readonly string[]): EgressAllow {
  const cidrs: string[] = [];
  const hosts: string[] = [];
  for (const raw of entries) {
    const e = raw.trim();
    const literal = e.startsWith('[') && e.includes(']') ? e.replace(/^\[([^\]]*)\]/, '$1') : e;
    const c = parseCidr(literal);
    if (c) cidrs.push(`${c.address}/${c.prefix}`);
    else if (HOST_RE.test(normalizeHost(e)) && !/^[\d.]+$/.test(normalizeHost(e))) hosts.push(normalizeHost(e));
    else
      throw new Error(
        `'${raw}' is neither a CIDR (10.0.0.0/8, fd00::/8), an IP address nor a host name (hooks.corp.example, *.corp.example)`,
      );
  }
  return { cidrs, hosts };
}

export interface DispatcherOptions {
  /** DNS resolution; default dns.lookup. Tests inject a resolver to play DNS rebinding. */
  lookup?: (
    hostname: string,
    options: LookupAllOptions,
    cb: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
  ) => void;
  /** TCP/TLS connect timeout in ms (undici default 10 s). */
  connectTimeoutMs?: number;
}

const URL_VERDICTS_MAX = 1024;

export class EgressPolicy {
  readonly allow: EgressAllow;
  readonly #allowList = new BlockList();
  readonly #allowHosts: ReadonlySet<string>;
  readonly #allowSuffixes: readonly string[];
  #dispatcher: Dispatcher | undefined;
  /** classifyUrl's verdicts by URL (pure for a policy): every notification checks its URL again before sending. */
  readonly #verdicts = new Map<string, { reason: EgressRefusal; message: string } | null>();

  readonly #onRefused: NonNullable<EgressPolicyOptions['onRefused']>;

  constructor(allow: EgressAllow = NO_EGRESS_ALLOW, opts: EgressPolicyOptions = {}) {
    this.allow = allow;
    this.#onRefused = opts.onRefused ?? (() => {});
    for (const s of allow.cidrs) {
      const c = parseCidr(s);
      if (!c) throw new Error(`egress allow-list: '${s}' is not a CIDR`);
      this.#allowList.addSubnet(c.address, c.prefix, c.family);
    }
    this.#allowHosts = new Set(allow.hosts.filter((h) => !h.startsWith('*.')));
    this.#allowSuffixes = allow.hosts.filter((h) => h.startsWith('*.')).map((h) => h.slice(1));
  }

  /** Whether a host name is on the allow-list (then every address it resolves to is allowed). */
  hostAllowed(host: string): boolean {
    const h = normalizeHost(host);
    return this.#allowHosts.has(h) || this.#allowSuffixes.some((s) => h.endsWith(s));
  }

  /** Refusal reason for connecting to `ip`, or null when allowed. */
  checkAddress(ip: string): string | null {
    const v = isIP(ip);
    if (v !== 0 && this.#allowList.check(ip, v === 4 ? 'ipv4' : 'ipv6')) return null;
    return deniedRange(ip);
  }

  /** Refusal reason for a URL host (name or literal, brackets allowed), before any DNS; null when it may proceed. */
  checkHost(host: string): string | null {
    const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    if (isIP(bare)) return this.hostAllowed(bare) ? null : this.checkAddress(bare);
    if (this.hostAllowed(bare)) return null;
    if (DENIED_NAMES.has(normalizeHost(bare))) return METADATA_HOST;
    return null;
  }

  /**
   * The create/update check of a tenant-given URL: http(s), no user:pass@, a port in 1-65535, no
   * denied literal address or metadata name. Returns what is wrong (never the URL: it may carry a token).
   * `stage` says who asks (the refusal metric): create/update, or a notifier right before sending.
   */
  checkUrl(url: string, stage: EgressStage = 'create_update'): string | null {
    const r = this.classifyUrl(url);
    if (!r) return null;
    this.#onRefused(r.reason, stage);
    return r.message;
  }

  /** checkUrl's decision, with the refusal class; reports nothing. */
  classifyUrl(url: string): { reason: EgressRefusal; message: string } | null {
    const known = this.#verdicts.get(url);
    if (known !== undefined) return known;
    const verdict = this.#classify(url);
    if (this.#verdicts.size >= URL_VERDICTS_MAX) this.#verdicts.clear(); // bounded: a new one costs one URL parse
    this.#verdicts.set(url, verdict);
    return verdict;
  }

  #classify(url: string): { reason: EgressRefusal; message: string } | null {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return { reason: 'invalid_url', message: 'is not a valid URL (an absolute http or https URL is needed)' };
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return { reason: 'scheme', message: 'must be an http(s) URL' };
    if (u.username || u.password)
      return {
        reason: 'userinfo',
        message: 'must not carry credentials (user:password@); put a token in the path or use a signing secret',
      };
    if (u.port === '0') return { reason: 'port', message: 'must have a port between 1 and 65535' };
    if (!u.hostname) return { reason: 'no_host', message: 'must name a host' };
    const denied = this.checkHost(u.hostname);
    if (denied)
      return {
        reason: refusalClass(denied),
        message: `points to a ${denied} address, which the egress policy refuses (an operator may allow it with --egress-allow)`,
      };
    return null;
  }

  /**
   * Closes the shared dispatcher at shutdown: its pooled keep-alive connections end, and a request still in
   * flight is cut. Called after the delivery worker stopped and the HTTP server's deadline passed, so whatever
   * is left is a straggler. destroy(), not close(): close() would wait for stragglers, and undici 7 does not
   * abort them when destroy() follows a close() (the request stays pending).
   */
  async close(): Promise<void> {
    await this.#dispatcher?.destroy();
  }

  /** The undici dispatcher that enforces this policy at connect time (one per policy: it pools connections). */
  dispatcher(opts: DispatcherOptions = {}): Dispatcher {
    if (opts.lookup || opts.connectTimeoutMs !== undefined) return this.#build(opts);
    return (this.#dispatcher ??= this.#build(opts));
  }

  /** A connect-time refusal: counted, then the error the connection fails with. */
  #refuse(range: string): EgressDeniedError {
    this.#onRefused(refusalClass(range), 'connect');
    return new EgressDeniedError(range);
  }

  #build(opts: DispatcherOptions): Dispatcher {
    const resolve = opts.lookup ?? ((h, o, cb) => dnsLookup(h, o, cb));
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the lookup callback below is a plain function
    const policy = this;
    // net.connect calls this for host names only (never for IP literals); every address must pass.
    const lookup: LookupFunction = (hostname, options, cb) => {
      resolve(hostname, { ...options, all: true }, (err, addresses) => {
        if (err) return cb(err, '', 0);
        const list = addresses ?? [];
        if (!policy.hostAllowed(hostname)) {
          for (const a of list) {
            const denied = policy.checkAddress(a.address);
            if (denied) return cb(policy.#refuse(denied), '', 0);
          }
        }
        if (list.length === 0) return cb(Object.assign(new Error('no addresses'), { code: 'ENOTFOUND' }), '', 0);
        if (options.all) return (cb as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
        cb(null, list[0]!.address, list[0]!.family);
      });
    };
    // a spread: undici's options (an intersection with net's) take a timeout only as a number
    const connect = buildConnector({ lookup, ...(opts.connectTimeoutMs !== undefined ? { timeout: opts.connectTimeoutMs } : {}) });
    return new Agent({
      connect(options, cb) {
        const denied = policy.checkHost(options.hostname);
        if (denied) return cb(policy.#refuse(denied), null);
        connect(options, cb);
      },
    });
  }
}

/**
 * certmgr_notify_egress_refused_total{reason,stage}: tenant destinations the egress policy refused. `reason` is a
 * coarse class (EgressRefusal: denied_address, metadata_host, userinfo, scheme, port, invalid_url, no_host), never
 * the address; `stage` is create_update (the early check) or connect (a send: pre-send check or connect time).
 */
export function createEgressRefusedCounter(registry: Registry): Counter<'reason' | 'stage'> {
  return new Counter({
    name: 'certmgr_notify_egress_refused_total',
    help: 'Tenant destinations refused by the egress policy, by coarse reason and stage (create_update or connect)',
    labelNames: ['reason', 'stage'],
    registers: [registry],
  });
}
