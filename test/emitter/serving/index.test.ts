/**
 * The EndpointIndex: endpoints by TLS Secret as the Ingress and Gateway informers add, update and delete objects;
 * listeners hear of each Secret whose endpoints changed, and of nothing else.
 */
import { describe, expect, it } from 'vitest';
import { MAX_HOSTS_PER_OBJECT, gatewayFacts, ingressFacts, type RawObject } from '../../../src/emitter/serving/discover.js';
import { EndpointIndex } from '../../../src/emitter/serving/informers.js';

function ingress(
  name: string,
  tls: { hosts: string[]; secretName: string }[],
  o: { ip?: string; rv?: string; ns?: string } = {},
): RawObject {
  return {
    metadata: { name, namespace: o.ns ?? 'shop', resourceVersion: o.rv ?? '1' },
    spec: { tls },
    status: { loadBalancer: { ingress: [{ ip: o.ip ?? '10.0.0.1' }] } },
  };
}

function setup() {
  const index = new EndpointIndex();
  const heard: string[] = [];
  index.onChange((ns, name) => heard.push(`${ns}/${name}`));
  const hosts = (ns: string, secret: string) => index.endpointsOf(ns, secret).map((e) => `${e.source.name}:${e.host}@${e.address}`);
  return { index, heard, hosts };
}

describe('EndpointIndex', () => {
  it('an added Ingress gives its Secrets their endpoints, and says so per Secret', () => {
    const { index, heard, hosts } = setup();
    index.setIngress(
      ingressFacts(
        ingress('web', [
          { hosts: ['a.example.com', 'b.example.com'], secretName: 'ab' },
          { hosts: ['c.example.com'], secretName: 'c' },
        ]),
      ),
    );
    expect(hosts('shop', 'ab')).toEqual(['web:a.example.com@10.0.0.1:443', 'web:b.example.com@10.0.0.1:443']);
    expect(hosts('shop', 'c')).toEqual(['web:c.example.com@10.0.0.1:443']);
    expect(hosts('other', 'ab')).toEqual([]);
    expect(heard).toEqual(['shop/ab', 'shop/c']);
    expect([...index.all()].map((e) => e.host)).toEqual(['a.example.com', 'b.example.com', 'c.example.com']);
    expect(index.stats).toEqual({ objects: 1, endpoints: 3, secrets: 2, cut: 0 });
  });

  it('an update that changes no endpoint (a new resourceVersion, a relist) is not heard', () => {
    const { index, heard } = setup();
    index.setIngress(ingressFacts(ingress('web', [{ hosts: ['a.example.com'], secretName: 'a' }])));
    const before = index.endpointsOf('shop', 'a');
    heard.length = 0;
    index.setIngress(ingressFacts(ingress('web', [{ hosts: ['a.example.com'], secretName: 'a' }], { rv: '2' })));
    expect(heard).toEqual([]);
    expect(index.endpointsOf('shop', 'a')).toBe(before);
  });

  it('a host moved to another Secret, or a new address: both Secrets heard, the old one empty', () => {
    const { index, heard, hosts } = setup();
    index.setIngress(ingressFacts(ingress('web', [{ hosts: ['a.example.com'], secretName: 'old' }])));
    heard.length = 0;
    index.setIngress(ingressFacts(ingress('web', [{ hosts: ['a.example.com'], secretName: 'new' }], { rv: '2' })));
    expect(heard.sort()).toEqual(['shop/new', 'shop/old']);
    expect(hosts('shop', 'old')).toEqual([]);
    expect(hosts('shop', 'new')).toEqual(['web:a.example.com@10.0.0.1:443']);
    heard.length = 0;
    index.setIngress(ingressFacts(ingress('web', [{ hosts: ['a.example.com'], secretName: 'new' }], { rv: '3', ip: '10.0.0.2' })));
    expect(heard).toEqual(['shop/new']);
    expect(hosts('shop', 'new')).toEqual(['web:a.example.com@10.0.0.2:443']);
    expect(index.stats.secrets).toBe(1);
  });

  it('Ingresses sharing a Secret: each keeps its own endpoints; deleting one leaves the other', () => {
    const { index, heard, hosts } = setup();
    index.setIngress(ingressFacts(ingress('one', [{ hosts: ['a.example.com'], secretName: 'wild' }])));
    index.setIngress(ingressFacts(ingress('two', [{ hosts: ['b.example.com'], secretName: 'wild' }], { ip: '10.0.0.9' })));
    expect(hosts('shop', 'wild')).toEqual(['one:a.example.com@10.0.0.1:443', 'two:b.example.com@10.0.0.9:443']);
    heard.length = 0;
    index.delete('Ingress', { name: 'one', namespace: 'shop' });
    expect(heard).toEqual(['shop/wild']);
    expect(hosts('shop', 'wild')).toEqual(['two:b.example.com@10.0.0.9:443']);
    index.delete('Ingress', { name: 'two', namespace: 'shop' });
    expect(index.stats).toEqual({ objects: 0, endpoints: 0, secrets: 0, cut: 0 });
    heard.length = 0;
    index.delete('Ingress', { name: 'never-seen', namespace: 'shop' });
    expect(heard).toEqual([]);
  });

  it('an Ingress and a Gateway of the same name are different objects; a Gateway may use a Secret of another namespace', () => {
    const { index, hosts } = setup();
    index.setIngress(ingressFacts(ingress('edge', [{ hosts: ['a.example.com'], secretName: 'a' }], { ns: 'certs' })));
    const gw: RawObject = {
      metadata: { name: 'edge', namespace: 'certs' },
      spec: {
        listeners: [
          { protocol: 'HTTPS', port: 443, hostname: 'g.example.com', tls: { certificateRefs: [{ name: 'a' }] } },
          { protocol: 'HTTPS', port: 443, hostname: 'h.example.com', tls: { certificateRefs: [{ name: 'h', namespace: 'shop' }] } },
        ],
      },
      status: { addresses: [{ value: '10.0.0.5' }] },
    };
    index.setGateway(gatewayFacts(gw));
    expect(hosts('certs', 'a')).toEqual(['edge:a.example.com@10.0.0.1:443', 'edge:g.example.com@10.0.0.5:443']);
    expect(hosts('shop', 'h')).toEqual(['edge:h.example.com@10.0.0.5:443']);
    index.delete('Gateway', { name: 'edge', namespace: 'certs' });
    expect(hosts('certs', 'a')).toEqual(['edge:a.example.com@10.0.0.1:443']);
    expect(hosts('shop', 'h')).toEqual([]);
  });

  it('counts the hosts objects cut, and forgets them when the object goes', () => {
    const { index } = setup();
    const many = Array.from({ length: MAX_HOSTS_PER_OBJECT + 5 }, (_, i) => `h${i}.example.com`);
    index.setIngress(ingressFacts(ingress('big', [{ hosts: many, secretName: 'a' }])));
    expect(index.stats).toMatchObject({ endpoints: MAX_HOSTS_PER_OBJECT, cut: 5 });
    index.setIngress(ingressFacts(ingress('big', [{ hosts: many.slice(0, MAX_HOSTS_PER_OBJECT + 2), secretName: 'a' }], { rv: '2' })));
    expect(index.stats.cut).toBe(2);
    index.delete('Ingress', { name: 'big', namespace: 'shop' });
    expect(index.stats.cut).toBe(0);
  });

  it('an object whose kept hosts give no endpoint still has its cut counted, and uncounted when it goes', () => {
    const { index } = setup();
    const many = Array.from({ length: MAX_HOSTS_PER_OBJECT + 3 }, (_, i) => `h${i}.example.com`);
    index.setIngress(ingressFacts(ingress('odd', [{ hosts: many, secretName: 'Not_A_Secret_Name' }])));
    expect(index.stats).toMatchObject({ endpoints: 0, cut: 3 });
    index.delete('Ingress', { name: 'odd', namespace: 'shop' });
    expect(index.stats.cut).toBe(0);
  });

  it('an Ingress that serves nothing any more is removed', () => {
    const { index, heard } = setup();
    index.setIngress(ingressFacts(ingress('web', [{ hosts: ['a.example.com'], secretName: 'a' }])));
    heard.length = 0;
    index.setIngress(ingressFacts(ingress('web', [], { rv: '2' })));
    expect(heard).toEqual(['shop/a']);
    expect(index.stats).toEqual({ objects: 0, endpoints: 0, secrets: 0, cut: 0 });
  });
});
