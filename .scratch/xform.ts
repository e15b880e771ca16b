import { certManagerFacts } from '../src/emitter/informers.js';
import { tlsSecretFacts } from '../src/emitter/inventory/facts.js';
import { generateTlsMaterial } from '../bench/lib/kube-bench.js';
const m = generateTlsMaterial(1)[0]!;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const secrets = Array.from({ length: 1000 }, (_, i) => ({ apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { name: `app-${i}-tls`, namespace: 'scale-001', uid: '43ced989-723b-4eac-bad0-f8bead6976df', resourceVersion: String(100000 + i), creationTimestamp: '2026-11-27T03:00:00Z', labels: { 'controller.cert-manager.io/fao': 'true' }, annotations: { 'cert-manager.io/certificate-name': `app-${i}`, 'cert-manager.io/issuer-name': 'ca-issuer' }, managedFields: [{ manager: 'x', operation: 'Update', apiVersion: 'v1', time: '2026-11-27T03:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:tls.crt': {} } } }] }, data: { 'tls.crt': b64(m.crt), 'tls.key': b64(m.key), 'ca.crt': b64(m.ca) } }));
const page = JSON.stringify({ apiVersion: 'v1', kind: 'SecretList', metadata: { resourceVersion: '1' }, items: secrets });
console.log('page MB', (page.length / 1e6).toFixed(1));
for (let r = 0; r < 30; r++) {
  let t = performance.now(); const parsed = JSON.parse(page) as { items: never[] }; const tp = performance.now() - t;
  t = performance.now(); for (const s of parsed.items) tlsSecretFacts(s); const tx = performance.now() - t;
  console.log(`parse ${tp.toFixed(1)} ms, transform ${tx.toFixed(1)} ms per 1000 secrets`);
}
const certs = Array.from({ length: 1000 }, (_, i) => ({ apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: `app-${i}`, namespace: 'scale-001', uid: '43ced989-723b-4eac-bad0-f8bead6976df', resourceVersion: String(100000 + i), generation: 1, creationTimestamp: '2026-11-27T03:00:00Z' }, spec: { secretName: `app-${i}-tls`, commonName: `app-${i}.bench.example.com`, dnsNames: [`app-${i}.bench.example.com`, `app-${i}.scale-001.svc.cluster.local`], issuerRef: { name: 'ca-issuer', kind: 'Issuer', group: 'cert-manager.io' } }, status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired', lastTransitionTime: '2026-11-27T03:00:00Z', observedGeneration: 1 }], notAfter: '2027-02-27T03:00:00Z' } }));
for (let r = 0; r < 5; r++) { const t = performance.now(); for (const c of certs) certManagerFacts(c as never); console.log(`cert transform ${(performance.now() - t).toFixed(1)} ms per 1000`); }
