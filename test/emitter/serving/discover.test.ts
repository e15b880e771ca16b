/**
 * Discovery: which hosts an Ingress or a Gateway serves with which TLS Secret, and the address to probe them at
 * (the probe-address annotation, else the load balancer address, else none with the reason).
 */
import { describe, expect, it } from 'vitest';
import {
  MAX_HOSTS_PER_OBJECT,
  PROBE_ADDRESS_ANNOTATION,
  gatewayEndpoints,
  gatewayFacts,
  ingressEndpoints,
  ingressFacts,
  parseProbeAddress,
  type RawObject,
} from '../../../src/emitter/serving/discover.js';
import type { Endpoint } from '../../../src/emitter/serving/types.js';

const NO_ADDRESS = `no address: the Ingress has no load balancer address (status.loadBalancer.ingress) and no ${PROBE_ADDRESS_ANNOTATION} annotation`;

function ingress(o: { tls?: unknown; rules?: unknown; lb?: unknown; annotation?: string; name?: string }): RawObject {
  return {
    metadata: {
      name: o.name ?? 'web',
      namespace: 'shop',
      uid: 'u-1',
      resourceVersion: '42',
      annotations: {
        ...(o.annotation !== undefined ? { [PROBE_ADDRESS_ANNOTATION]: o.annotation } : {}),
        'kubectl.kubernetes.io/last-applied-configuration': '{"big":"copy"}',
      },
    },
    spec: { ingressClassName: 'nginx', tls: o.tls, rules: o.rules ?? [{ host: 'shop.example.com', http: { paths: [] } }] },
    status: o.lb === undefined ? {} : { loadBalancer: { ingress: o.lb } },
  };
}

/** host → address or `!reason` of each endpoint, with its Secret. */
const brief = (es: Endpoint[]): string[] =>
  es.map((e) => `${e.host} ${e.address ?? `!${e.reason}`} ${e.secret.namespace}/${e.secret.name}`);

describe('ingressEndpoints', () => {
  const cases: { name: string; in: Parameters<typeof ingress>[0]; out: string[] }[] = [
    {
      name: 'every host of every tls entry with its secretName, at the load balancer IP on 443',
      in: {
        tls: [
          { hosts: ['a.example.com', 'b.example.com'], secretName: 'ab-tls' },
          { hosts: ['c.example.com'], secretName: 'c-tls' },
        ],
        lb: [{ ip: '203.0.113.7' }],
      },
      out: [
        'a.example.com 203.0.113.7:443 shop/ab-tls',
        'b.example.com 203.0.113.7:443 shop/ab-tls',
        'c.example.com 203.0.113.7:443 shop/c-tls',
      ],
    },
    {
      name: 'a load balancer hostname; the first entry with an address',
      in: { tls: [{ hosts: ['a.example.com'], secretName: 'a' }], lb: [{}, { hostname: 'lb-1.elb.example.net' }, { ip: '10.0.0.1' }] },
      out: ['a.example.com lb-1.elb.example.net:443 shop/a'],
    },
    {
      name: 'an IPv6 load balancer address in brackets',
      in: { tls: [{ hosts: ['a.example.com'], secretName: 'a' }], lb: [{ ip: '2001:DB8::1' }] },
      out: ['a.example.com [2001:db8::1]:443 shop/a'],
    },
    {
      name: 'the annotation wins over the load balancer',
      in: {
        tls: [{ hosts: ['a.example.com'], secretName: 'a' }],
        lb: [{ ip: '203.0.113.7' }],
        annotation: 'ingress-nginx.ingress.svc:8443',
      },
      out: ['a.example.com ingress-nginx.ingress.svc:8443 shop/a'],
    },
    {
      name: 'an annotation with an IPv6 address',
      in: { tls: [{ hosts: ['a.example.com'], secretName: 'a' }], annotation: '[fd00::10]:443' },
      out: ['a.example.com [fd00::10]:443 shop/a'],
    },
    {
      name: 'no load balancer address and no annotation: not probed, with the reason',
      in: { tls: [{ hosts: ['a.example.com'], secretName: 'a' }] },
      out: [`a.example.com !${NO_ADDRESS} shop/a`],
    },
    {
      name: 'an entry without hosts or without a secretName gives nothing',
      in: {
        tls: [{ secretName: 'default-tls' }, { hosts: [], secretName: 'x' }, { hosts: ['a.example.com'] }, null, 'junk'],
        lb: [{ ip: '10.0.0.1' }],
      },
      out: [],
    },
    {
      name: 'a secretName no Secret can have gives nothing',
      in: { tls: [{ hosts: ['a.example.com'], secretName: 'Not_A_Name' }], lb: [{ ip: '10.0.0.1' }] },
      out: [],
    },
    {
      name: 'a wildcard host is probed as the rule hosts it covers (one label deep)',
      in: {
        tls: [{ hosts: ['*.example.com'], secretName: 'wild' }],
        rules: [{ host: 'a.example.com' }, { host: 'b.example.com' }, { host: 'x.a.example.com' }, { host: 'other.org' }, {}],
        lb: [{ ip: '10.0.0.1' }],
      },
      out: ['a.example.com 10.0.0.1:443 shop/wild', 'b.example.com 10.0.0.1:443 shop/wild'],
    },
    {
      name: 'a wildcard host covering no rule host: not probed',
      in: { tls: [{ hosts: ['*.example.com'], secretName: 'wild' }], rules: [{ host: 'other.org' }], lb: [{ ip: '10.0.0.1' }] },
      out: ['*.example.com !wildcard host *.example.com: no server name to probe (no spec.rules[].host under it) shop/wild'],
    },
    {
      name: 'a host that is no DNS name: not probed, naming where',
      in: { tls: [{ hosts: ['a.example.com', 'bad host\u0007'], secretName: 'a' }], lb: [{ ip: '10.0.0.1' }] },
      out: ['a.example.com 10.0.0.1:443 shop/a', 'bad host\u0007 !spec.tls host "bad host\\u0007" is not a DNS name shop/a'],
    },
    {
      name: 'a host repeated for one Secret in two entries: one endpoint; for two Secrets: one each',
      in: {
        tls: [
          { hosts: ['a.example.com'], secretName: 'a' },
          { hosts: ['a.example.com'], secretName: 'a' },
          { hosts: ['a.example.com'], secretName: 'b' },
        ],
        lb: [{ ip: '10.0.0.1' }],
      },
      out: ['a.example.com 10.0.0.1:443 shop/a', 'a.example.com 10.0.0.1:443 shop/b'],
    },
    {
      name: 'hosts in upper case and repeated: one endpoint, lower case',
      in: { tls: [{ hosts: ['A.Example.COM', 'a.example.com'], secretName: 'a' }], lb: [{ ip: '10.0.0.1' }] },
      out: ['a.example.com 10.0.0.1:443 shop/a'],
    },
    {
      name: 'a load balancer value that is no address',
      in: { tls: [{ hosts: ['a.example.com'], secretName: 'a' }], lb: [{ hostname: 'not valid!' }] },
      out: [`a.example.com !no address: the Ingress's load balancer address "not valid!" is not a DNS name or an IP address shop/a`],
    },
  ];
  it.each(cases)('$name', (c) => {
    expect(brief(ingressEndpoints(ingressFacts(ingress(c.in))))).toEqual(c.out);
  });

  const badAnnotations: [string, string][] = [
    ['ingress.example.com', 'not <host>:<port>'],
    ['ingress.example.com:0', 'port 0 out of range'],
    ['ingress.example.com:65536', 'port 65536 out of range'],
    ['ingress.example.com:', 'not <host>:<port>'],
    ['ingress.example.com:44x', 'not <host>:<port>'],
    ['::1:443', 'not <host>:<port>'],
    ['[zz::q]:443', '[zz::q] is not an IPv6 address'],
    ['bad_host:443', 'the host is not a DNS name or an IP address'],
    [':443', 'the host is not a DNS name or an IP address'],
    [`${'a'.repeat(300)}:443`, 'longer than 261 characters'],
    ['x.example.com:443\nHost: evil', 'not <host>:<port>'],
  ];
  it.each(badAnnotations)('an invalid annotation %j: no address, the reason names the annotation and the value', (value, why) => {
    const [e] = ingressEndpoints(
      ingressFacts(ingress({ tls: [{ hosts: ['a.example.com'], secretName: 'a' }], lb: [{ ip: '10.0.0.1' }], annotation: value })),
    );
    expect(e!.address).toBeNull();
    expect(e!.reason).toContain(`invalid ${PROBE_ADDRESS_ANNOTATION} annotation "`);
    expect(e!.reason).toContain(why);
    expect(e!.reason).not.toContain('\n');
    expect(Array.from(e!.reason!).length).toBeLessThanOrEqual(512);
  });

  it('parses valid annotations', () => {
    expect(parseProbeAddress('10.1.2.3:1')).toEqual({ address: '10.1.2.3:1' });
    expect(parseProbeAddress('Ingress.Example.com:65535')).toEqual({ address: 'ingress.example.com:65535' });
    expect(parseProbeAddress('[::1]:443')).toEqual({ address: '[::1]:443' });
  });

  it('the facts keep only what discovery reads, and the source names the Ingress', () => {
    const f = ingressFacts(
      ingress({
        tls: [{ hosts: ['a.example.com'], secretName: 'a' }],
        lb: [{ ip: '10.0.0.1', ports: [{ port: 443 }] }],
        annotation: 'x.example.com:443',
      }),
    );
    expect(f).toEqual({
      metadata: { name: 'web', namespace: 'shop', uid: 'u-1', resourceVersion: '42' },
      probeAddress: 'x.example.com:443',
      tls: [{ hosts: ['a.example.com'], secretName: 'a' }],
      lbAddress: '10.0.0.1',
    });
    expect(ingressEndpoints(f)[0]!.source).toEqual({ kind: 'Ingress', namespace: 'shop', name: 'web' });
  });

  it(`keeps at most ${MAX_HOSTS_PER_OBJECT} hosts per Ingress and counts the rest`, () => {
    const hosts = Array.from({ length: 100 }, (_, i) => `h${i}.example.com`);
    const f = ingressFacts(
      ingress({
        tls: [
          { hosts: hosts.slice(0, 50), secretName: 'a' },
          { hosts: hosts.slice(50), secretName: 'b' },
        ],
        lb: [{ ip: '10.0.0.1' }],
      }),
    );
    expect(f.cut).toBe(100 - MAX_HOSTS_PER_OBJECT);
    const es = ingressEndpoints(f);
    expect(es).toHaveLength(MAX_HOSTS_PER_OBJECT);
    expect(es.at(-1)!.host).toBe(`h${MAX_HOSTS_PER_OBJECT - 1}.example.com`);
  });

  it('hostile sizes are cut in the facts (a host longer than a DNS name is reported, not kept whole)', () => {
    const long = `${'a'.repeat(100_000)}.example.com`;
    const f = ingressFacts(
      ingress({ tls: [{ hosts: [long], secretName: 'a' }], lb: [{ ip: '10.0.0.1' }], annotation: 'b'.repeat(100_000) }),
    );
    expect(f.tls[0]!.hosts[0]!.length).toBeLessThanOrEqual(254);
    expect(f.probeAddress!.length).toBeLessThanOrEqual(262);
    const [e] = ingressEndpoints(f);
    expect(e!.host.length).toBeLessThanOrEqual(253);
    expect(e!.address).toBeNull();
  });
});

function gateway(o: { listeners: unknown[]; addresses?: unknown[]; annotation?: string }): RawObject {
  return {
    metadata: {
      name: 'gw',
      namespace: 'infra',
      resourceVersion: '7',
      ...(o.annotation !== undefined ? { annotations: { [PROBE_ADDRESS_ANNOTATION]: o.annotation } } : {}),
    },
    spec: { gatewayClassName: 'istio', listeners: o.listeners },
    status: o.addresses ? { addresses: o.addresses } : {},
  };
}

const https = (hostname: string | undefined, refs: unknown[], extra: Record<string, unknown> = {}) => ({
  name: `l-${hostname ?? 'any'}`,
  protocol: 'HTTPS',
  port: 443,
  ...(hostname !== undefined ? { hostname } : {}),
  tls: { mode: 'Terminate', certificateRefs: refs },
  ...extra,
});

describe('gatewayEndpoints', () => {
  const cases: { name: string; in: Parameters<typeof gateway>[0]; out: string[] }[] = [
    {
      name: 'an HTTPS listener with a hostname and a Secret, at the first address on the listener port',
      in: {
        listeners: [https('a.example.com', [{ name: 'a-tls' }], { port: 8443 })],
        addresses: [{ type: 'IPAddress', value: '198.51.100.4' }, { value: '10.0.0.9' }],
      },
      out: ['a.example.com 198.51.100.4:8443 infra/a-tls'],
    },
    {
      name: 'TLS Terminate (mode defaults to Terminate), a Hostname address, group core, kind Secret',
      in: {
        listeners: [
          {
            protocol: 'TLS',
            port: 443,
            hostname: 'b.example.com',
            tls: { certificateRefs: [{ group: 'core', kind: 'Secret', name: 'b' }] },
          },
        ],
        addresses: [{ type: 'Hostname', value: 'gw.example.net' }],
      },
      out: ['b.example.com gw.example.net:443 infra/b'],
    },
    {
      name: 'a certificateRef in another namespace keeps it; the first Secret ref is used',
      in: {
        listeners: [https('c.example.com', [{ kind: 'ConfigMap', name: 'x' }, { name: 'c', namespace: 'certs' }, { name: 'd' }])],
        addresses: [{ value: '10.0.0.1' }],
      },
      out: ['c.example.com 10.0.0.1:443 certs/c'],
    },
    {
      name: 'HTTP, Passthrough, no certificateRefs, refs to other kinds or groups, no hostname: nothing',
      in: {
        listeners: [
          { protocol: 'HTTP', port: 80, hostname: 'a.example.com' },
          { protocol: 'TLS', port: 443, hostname: 'a.example.com', tls: { mode: 'Passthrough' } },
          https('a.example.com', []),
          https('a.example.com', [{ group: 'example.com', kind: 'Secret', name: 'x' }]),
          https(undefined, [{ name: 'catch-all' }]),
        ],
        addresses: [{ value: '10.0.0.1' }],
      },
      out: [],
    },
    {
      name: 'a wildcard hostname: not probed',
      in: { listeners: [https('*.example.com', [{ name: 'w' }])], addresses: [{ value: '10.0.0.1' }] },
      out: ['*.example.com !wildcard hostname *.example.com: no server name to probe infra/w'],
    },
    {
      name: 'a hostname that is no DNS name: not probed, quoted',
      in: { listeners: [https('bad_host', [{ name: 'a' }])], addresses: [{ value: '10.0.0.1' }] },
      out: ['bad_host !listener hostname "bad_host" is not a DNS name infra/a'],
    },
    {
      name: 'the annotation wins over the addresses',
      in: { listeners: [https('a.example.com', [{ name: 'a' }])], addresses: [{ value: '10.0.0.1' }], annotation: 'envoy.gw.svc:10443' },
      out: ['a.example.com envoy.gw.svc:10443 infra/a'],
    },
    {
      name: 'no address and no annotation',
      in: { listeners: [https('a.example.com', [{ name: 'a' }])], addresses: [{ type: 'NamedAddress', value: 'pool-1' }] },
      out: [`a.example.com !no address: the Gateway has no status.addresses and no ${PROBE_ADDRESS_ANNOTATION} annotation infra/a`],
    },
    {
      name: 'one hostname on two ports: two endpoints',
      in: {
        listeners: [https('a.example.com', [{ name: 'a' }]), https('a.example.com', [{ name: 'a' }], { port: 8443 })],
        addresses: [{ value: '10.0.0.1' }],
      },
      out: ['a.example.com 10.0.0.1:443 infra/a', 'a.example.com 10.0.0.1:8443 infra/a'],
    },
    {
      name: 'an invalid annotation',
      in: { listeners: [https('a.example.com', [{ name: 'a' }])], addresses: [{ value: '10.0.0.1' }], annotation: 'gw:99999' },
      out: [
        `a.example.com !invalid ${PROBE_ADDRESS_ANNOTATION} annotation "gw:99999": port 99999 out of range; expected <host>:<port> (a DNS name, an IPv4 address or [IPv6], port 1-65535) infra/a`,
      ],
    },
  ];
  it.each(cases)('$name', (c) => {
    expect(brief(gatewayEndpoints(gatewayFacts(gateway(c.in))))).toEqual(c.out);
  });

  it('the facts keep the terminating listeners with a Secret and the first address; the source names the Gateway', () => {
    const f = gatewayFacts(
      gateway({ listeners: [https('a.example.com', [{ name: 'a' }]), { protocol: 'HTTP', port: 80 }], addresses: [{ value: '10.0.0.1' }] }),
    );
    expect(f).toEqual({
      metadata: { name: 'gw', namespace: 'infra', resourceVersion: '7' },
      listeners: [{ hostname: 'a.example.com', port: 443, secret: { namespace: 'infra', name: 'a' } }],
      address: '10.0.0.1',
    });
    expect(gatewayEndpoints(f)[0]!.source).toEqual({ kind: 'Gateway', namespace: 'infra', name: 'gw' });
  });

  it(`keeps at most ${MAX_HOSTS_PER_OBJECT} listeners per Gateway and counts the rest`, () => {
    const listeners = Array.from({ length: 70 }, (_, i) => https(`h${i}.example.com`, [{ name: 's' }]));
    const f = gatewayFacts(gateway({ listeners, addresses: [{ value: '10.0.0.1' }] }));
    expect(f.listeners).toHaveLength(MAX_HOSTS_PER_OBJECT);
    expect(f.cut).toBe(70 - MAX_HOSTS_PER_OBJECT);
  });
});
