import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { celEvalCommand } from '../../src/cli/cel-eval.js';
import {
  certificateResourceActive,
  certificateResourceNotReady,
  expiringCertificate,
  issuerActive,
  issuerNotReady,
} from '../fixtures/events.js';

let dir: string;
const files: Record<string, string> = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cel-eval-'));
  const write = async (name: string, content: string) => {
    files[name] = join(dir, name);
    await writeFile(files[name], content);
  };
  await write('issuer-notready.json', JSON.stringify(issuerNotReady(), null, 2));
  await write('issuer-active.yaml', toYaml(issuerActive()));
  await write('cert-notready.yaml', toYaml(certificateResourceNotReady({ SANs: {} })));
  await write('cert-active.json', JSON.stringify(certificateResourceActive()));
  await write('expiry.yml', toYaml(expiringCertificate({ ruleId: 3 })));
  await write('bad-uuid.json', JSON.stringify(issuerNotReady({ clusterId: 'prod-eu-west-1' })));
  await write('unknown-type.json', JSON.stringify({ type: 'evt.healthstatus.certmgr-issuer.degraded', data: {} }));
  await write('garbage.txt', '{ "type": [unclosed');
  // Hand-written YAML: unquoted timestamps must stay strings.
  await write(
    'hand.yaml',
    [
      'type: evt.healthstatus.certmgr-issuer.notready',
      'data:',
      '  clusterId: 3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31',
      '  clusterName: prod-eu-west-1',
      '  issuerName: letsencrypt-prod',
      '  namespace: cert-manager',
      '  resourceId: 9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
      '  statusMessage: Failed to register ACME account',
      '  statusReason: ErrRegisterACMEAccount',
      '  statusTransition: 2025-03-14T09:26:53Z',
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await celEvalCommand(argv, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('certmgr-notify cel eval', () => {
  it.each<[string, string, string[], string]>([
    ['JSON, matching', "type.endsWith('.notready')", ['issuer-notready.json'], 'true'],
    ['JSON, not matching', "type.endsWith('.active')", ['issuer-notready.json'], 'false'],
    ['YAML, restored issuer', "type.endsWith('.active') && data.issuerName == 'letsencrypt-prod'", ['issuer-active.yaml'], 'true'],
    ['.yml expiration by rule', 'data.ruleId == 3', ['expiry.yml'], 'true'],
    ['expiration by application', "'inventory-app' in data.applicationIds", ['expiry.yml'], 'false'],
    [
      'hand-written YAML with a bare timestamp',
      "timestamp(data.statusTransition) < timestamp('2030-01-01T00:00:00Z')",
      ['hand.yaml'],
      'true',
    ],
    ['empty expression', '', ['cert-active.json'], 'true'],
  ])('%s', async (_name, expr, [file], expected) => {
    const r = await run('--expr', expr, '--event', files[file!]!);
    expect(r).toEqual({ code: 0, out: expected, err: '' });
  });

  it('accepts --opt=value and an explicit, matching --event-type-id', async () => {
    const r = await run(
      `--expr=data.subject.commonName == 'api.internal.example.org'`,
      `--event=${files['cert-active.json']}`,
      '--event-type-id',
      'certmgr-cert-resource-health-notification-config',
    );
    expect(r).toEqual({ code: 0, out: 'true', err: '' });
  });

  it('checks the expression against the given family (exit 2 with the position)', async () => {
    const r = await run('--expr', 'data.ruleId == 3', '--event', files['issuer-notready.json']!);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toBe(
      "invalid expression for certmgr-issuer-health-notification-config: 1:6: event data of certmgr-issuer-health-notification-config has no field 'ruleId'",
    );
  });

  it('reports a syntax error with its position (exit 2)', async () => {
    const r = await run('--expr', 'type.endsWith(', '--event', files['issuer-notready.json']!);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/1:15: syntax error/);
  });

  it('rejects an event that fails its schema (exit 2, path listed)', async () => {
    const r = await run('--expr', 'true', '--event', files['bad-uuid.json']!);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^invalid event:\n {2}data\.clusterId: must be a UUID in the canonical 8-4-4-4-12 hex form[^\n]*$/);
  });

  it('rejects an event of unknown type when the family cannot be inferred (exit 2)', async () => {
    const r = await run('--expr', 'true', '--event', files['unknown-type.json']!);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^invalid event:\n {2}type: must be one of/);
  });

  it('rejects an event that is not in the given family (exit 2)', async () => {
    const r = await run('--expr', 'true', '--event', files['expiry.yml']!, '--event-type-id', 'certmgr-issuer-health-notification-config');
    expect(r.code).toBe(2);
    expect(r.err).toBe('event type evt.policy.expiringcertificates.failed does not belong to certmgr-issuer-health-notification-config');
  });

  it('prints an evaluation error and exits 1', async () => {
    const r = await run('--expr', "data.SANs['DNS Names'].exists(n, n.endsWith('.example.com'))", '--event', files['cert-notready.yaml']!);
    expect(r).toEqual({ code: 1, out: '', err: "evaluation error at 1:11: event data has no 'DNS Names'" });
  });

  it.each<[string, string[], RegExp]>([
    ['missing --expr', ['--event', 'x.json'], /missing --expr\n\nusage:/],
    ['missing --event', ['--expr', 'true'], /missing --event/],
    ['unknown option', ['--expr', 'true', '--event', 'x.json', '--verbose'], /Unknown option '--verbose'/],
    ['positional argument', ['--expr', 'true', 'x.json'], /positional/i],
    ['unknown --event-type-id', ['--expr', 'true', '--event', 'x.json', '--event-type-id', 'issuers'], /unknown --event-type-id "issuers"/],
  ])('usage error: %s (exit 2)', async (_name, argv, message) => {
    const r = await run(...argv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
  });

  it('reports an unreadable file (exit 2)', async () => {
    const r = await run('--expr', 'true', '--event', join(dir, 'missing.json'));
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/cannot read event file .*missing\.json: ENOENT/);
  });

  it('reports a file that is neither JSON nor YAML (exit 2)', async () => {
    const r = await run('--expr', 'true', '--event', files['garbage.txt']!);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/cannot parse event file .* as JSON or YAML/);
  });

  it('--help prints usage (exit 0)', async () => {
    const r = await run('--help');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^usage: certmgr-notify cel eval --expr EXPRESSION --event FILE/);
  });
});
