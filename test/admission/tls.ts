/**
 * Test certificates made with the openssl CLI: a CA and serving certificates it signs (SAN IP:127.0.0.1 and
 * DNS:localhost), as cert-manager's CA issuer would: the CA stays, the serving certificate rotates.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export interface TestCa {
  dir: string;
  caCert: string;
  caKey: string;
  /** PEM of the CA certificate (the caBundle). */
  caPem: string;
  /** A new serving certificate signed by the CA: PEM cert and key. */
  issue(cn?: string): Promise<{ cert: string; key: string }>;
}

export async function createTestCa(): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), 'cmn-webhook-ca-'));
  const caCert = join(dir, 'ca.crt');
  const caKey = join(dir, 'ca.key');
  await run('openssl', [
    'req',
    '-x509',
    ...EC,
    '-keyout',
    caKey,
    '-out',
    caCert,
    '-subj',
    '/CN=certmgr-notify-test-ca',
    '-days',
    '2',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const ext = join(dir, 'leaf.ext');
  await writeFile(
    ext,
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n',
  );
  let n = 0;
  return {
    dir,
    caCert,
    caKey,
    caPem: await readFile(caCert, 'utf8'),
    async issue(cn = '127.0.0.1') {
      const base = join(dir, `leaf-${++n}`);
      await run('openssl', ['req', ...EC, '-keyout', `${base}.key`, '-out', `${base}.csr`, '-subj', `/CN=${cn}`]);
      await run('openssl', [
        'x509',
        '-req',
        '-in',
        `${base}.csr`,
        '-CA',
        caCert,
        '-CAkey',
        caKey,
        '-set_serial',
        String(Date.now() * 1000 + n),
        '-days',
        '1',
        '-extfile',
        ext,
        '-out',
        `${base}.crt`,
      ]);
      return { cert: await readFile(`${base}.crt`, 'utf8'), key: await readFile(`${base}.key`, 'utf8') };
    },
  };
}

/** Writes a pair as `tls.crt` / `tls.key` into a new directory (cert-manager's Secret layout). */
export async function certDir(pair: { cert: string; key: string }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cmn-webhook-certs-'));
  await writeFile(join(dir, 'tls.crt'), pair.cert);
  await writeFile(join(dir, 'tls.key'), pair.key, { mode: 0o600 });
  return dir;
}
