/**
 * Real X.509 certificates for tests, from `openssl ca` (node:crypto cannot create X.509): exact validity dates
 * (a notBefore in the past, an already expired certificate), a chosen issuer, a random serial each, and the
 * TLS Secret cert-manager's `ca` Issuer would write for one.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

export interface Pem {
  pem: string;
  keyPem: string;
}

/** openssl's UTCTime, e.g. 261206052401Z */
const utc = (ms: number): string =>
  new Date(ms)
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/[-:T]/g, '')
    .slice(2);

/**
 * A certificate signed by `issuer` (self-signed without one) with exactly these validity dates, from `openssl ca`
 * (`req -x509` and `x509 -req` start at now). A random serial each, so no two share issuer + serial.
 */
export function sign(o: { cn: string; notBefore: number; notAfter: number; ca?: boolean; issuer?: Pem; dnsNames?: string[] }): Pem {
  const dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-expiry-truth-'));
  const p = (f: string) => join(dir, f);
  try {
    writeFileSync(p('index.txt'), '');
    writeFileSync(p('serial'), `${(0x40 | (randomBytes(1)[0]! & 0x3f)).toString(16)}${randomBytes(15).toString('hex')}\n`);
    writeFileSync(
      p('openssl.cnf'),
      [
        '[ca]',
        'default_ca = ca_default',
        '[ca_default]',
        `database = ${p('index.txt')}`,
        `serial = ${p('serial')}`,
        `new_certs_dir = ${dir}`,
        'default_md = sha256',
        'policy = any',
        'unique_subject = no',
        '[any]',
        'organizationName = optional',
        'commonName = supplied',
        '[v3_ca]',
        'basicConstraints = critical,CA:true',
        'keyUsage = critical,keyCertSign,cRLSign',
        'subjectKeyIdentifier = hash',
        '[v3_leaf]',
        'basicConstraints = CA:false',
        'keyUsage = critical,digitalSignature,keyEncipherment',
        'extendedKeyUsage = serverAuth',
        `subjectAltName = ${(o.dnsNames ?? [o.cn]).map((d) => `DNS:${d}`).join(',')}`,
        '',
      ].join('\n'),
    );
    const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
    openssl(
      ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', p('tls.key')].concat([
        '-out',
        p('tls.csr'),
        '-subj',
        `/O=Example/CN=${o.cn}`,
      ]),
    );
    if (o.issuer) {
      writeFileSync(p('ca.crt'), o.issuer.pem);
      writeFileSync(p('ca.key'), o.issuer.keyPem, { mode: 0o600 });
    }
    openssl([
      'ca',
      '-batch',
      '-notext',
      '-preserveDN',
      '-config',
      p('openssl.cnf'),
      '-in',
      p('tls.csr'),
      '-out',
      p('tls.crt'),
      '-startdate',
      utc(o.notBefore),
      '-enddate',
      utc(o.notAfter),
      '-extensions',
      o.ca ? 'v3_ca' : 'v3_leaf',
      ...(o.issuer ? ['-cert', p('ca.crt'), '-keyfile', p('ca.key')] : ['-selfsign', '-keyfile', p('tls.key')]),
    ]);
    return { pem: readFileSync(p('tls.crt'), 'utf8'), keyPem: readFileSync(p('tls.key'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A TLS Secret as cert-manager's `ca` Issuer writes it: the leaf in tls.crt, the root in ca.crt. */
export function tlsSecret(ns: string, name: string, crt: Pem, o: { ca?: Pem; annotations?: Record<string, string> } = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name, namespace: ns, ...(o.annotations ? { annotations: o.annotations } : {}) },
    data: { 'tls.crt': b64(crt.pem), 'tls.key': b64(crt.keyPem), ...(o.ca ? { 'ca.crt': b64(o.ca.pem) } : {}) },
  } as never;
}
