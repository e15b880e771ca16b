import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AGENT_FLAGS,
  ConfigError,
  DEFAULT_COMPANY_ID,
  SERVE_FLAGS,
  defaultConsoleDir,
  generatedKeyPath,
  loadAgentConfig,
  loadServeConfig,
} from '../src/config.js';
import { DEFAULT_SERVING_PROBE_INTERVAL_MS } from '../src/emitter/serving/prober.js';
import { formatDuration } from '../src/validation/duration.js';

/** `--limits-file <a file holding yaml>` */
function limits(yaml: string): string[] {
  const f = join(mkdtempSync(join(tmpdir(), 'cmn-limits-')), 'limits.yaml');
  writeFileSync(f, yaml);
  return ['--limits-file', f];
}

describe('loadServeConfig', () => {
  it('has the documented defaults', () => {
    const c = loadServeConfig([], {});
    expect(c).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      store: 'sqlite:./data/certmgr-notify.db',
      kube: 'auto',
      apiKeys: [],
      apiKeyPath: join('data', 'api-key'),
      deliveryTimeoutMs: 10_000,
      deliveryMaxAgeMs: 86_400_000,
      requestTimeoutMs: 30_000,
      logRateLimitPerMinute: 60,
      deliveryBaseDelayMs: 1_000,
    });
    expect(c.kubeOptions).toMatchObject({ leaseDurationMs: 15_000, resyncMs: 300_000, concurrency: 4, maxPendingEvents: 10_000 });
  });
  it.each([
    ['sqlite:./data/certmgr-notify.db', join('data', 'api-key')],
    ['sqlite:/var/lib/notify/db.sqlite', '/var/lib/notify/api-key'],
    ['sqlite::memory:', join('data', 'api-key')],
    ['postgres://db/notify', join('data', 'api-key')],
  ])('a generated API key of store %s is written to %s', (store, path) => {
    expect(generatedKeyPath(store)).toBe(path);
  });
  it('serve has at most 30 flags, each a knob an operator sets at deploy time', () => {
    expect(SERVE_FLAGS.length).toBeLessThanOrEqual(30);
  });
  it('flags win over environment; api-key repeats; env lists are comma-separated', () => {
    const c = loadServeConfig(['--port=9000', '--api-key', 'aaaaaaaaaaaaaaaa1', '--api-key', 'bbbbbbbbbbbbbbbb2'], {
      CERTMGR_NOTIFY_PORT: '7000',
      CERTMGR_NOTIFY_HOST: '127.0.0.1',
    });
    expect(c.port).toBe(9000);
    expect(c.host).toBe('127.0.0.1');
    expect(c.apiKeys).toEqual([
      { key: 'aaaaaaaaaaaaaaaa1', companyId: DEFAULT_COMPANY_ID },
      { key: 'bbbbbbbbbbbbbbbb2', companyId: DEFAULT_COMPANY_ID },
    ]);
    expect(loadServeConfig([], { CERTMGR_NOTIFY_API_KEY: 'aaaaaaaaaaaaaaaa1, bbbbbbbbbbbbbbbb2' }).apiKeys).toHaveLength(2);
  });
  it('per-company quotas: defaults 1000 routers and 200 integrations, from the limits file (flag or environment)', () => {
    expect(loadServeConfig([], {})).toMatchObject({ maxRoutersPerCompany: 1000, maxIntegrationsPerCompany: 200 });
    const [, file] = limits('maxRoutersPerCompany: 50\nmaxIntegrationsPerCompany: 7\n');
    expect(loadServeConfig(['--limits-file', file!], {})).toMatchObject({ maxRoutersPerCompany: 50, maxIntegrationsPerCompany: 7 });
    expect(loadServeConfig([], { CERTMGR_NOTIFY_LIMITS_FILE: file! })).toMatchObject({ maxRoutersPerCompany: 50 });
  });
  it('the limits file: durations written 500ms, 30s, 5m, 1h into the config in ms; absent keys keep their defaults', () => {
    const c = loadServeConfig(
      limits(
        [
          'expiryScanInterval: 5s',
          'deliveryTimeout: 500ms',
          'deliveryMaxAge: 1h',
          'deliveryRetryBase: 50ms',
          'deliveryWorkers: 0',
          'clusterSilenceAfter: 5m',
          'leaseDuration: 4s',
          'renewDeadline: 3s',
          'retryPeriod: 500ms',
          'resyncPeriod: 5m',
          'reconcileConcurrency: 2',
          'healthGracePeriod: 0s',
          'servingProbeInterval: 0',
          'maxIntegrationRate: 100',
        ].join('\n'),
      ),
      {},
    );
    expect(c).toMatchObject({
      expiryScanIntervalMs: 5_000,
      deliveryTimeoutMs: 500,
      deliveryMaxAgeMs: 3_600_000,
      deliveryBaseDelayMs: 50,
      deliveryWorkers: 0,
      clusterSilenceAfterMs: 300_000,
      maxIntegrationRate: 100,
      requestTimeoutMs: 30_000,
    });
    expect(c.kubeOptions).toMatchObject({
      leaseDurationMs: 4_000,
      renewDeadlineMs: 3_000,
      retryPeriodMs: 500,
      resyncMs: 300_000,
      concurrency: 2,
      healthGracePeriodMs: 0,
      healthUnknownGracePeriodMs: 600_000,
      servingProbeIntervalMs: 0,
    });
  });
  it.each([
    ['maxRouters: 5\n', "unknown key 'maxRouters'; known keys: maxRoutersPerCompany"],
    ['deliveryTimeout: 10000\n', 'deliveryTimeout must be a duration such as 500ms, 30s, 5m, 1h30m or 24h, got 10000'],
    ['expiryScanInterval: 10ms\n', "expiryScanInterval must be between 1s and 168h, got '10ms'"],
    ['maxRoutersPerCompany: 0\n', 'maxRoutersPerCompany must be between 1 and 100000, got 0'],
    ['maxIntegrationsPerCompany: many\n', "maxIntegrationsPerCompany must be a whole number (between 1 and 100000), got 'many'"],
    ['- 1\n', 'expected a mapping of limits'],
  ])('the limits file %j is refused naming the file and the key', (yaml, message) => {
    const args = limits(yaml);
    expect(() => loadServeConfig(args, {})).toThrow(ConfigError);
    expect(() => loadServeConfig(args, {})).toThrow(`--limits-file ${args[1]}: ${message}`);
  });
  it('a missing limits file is refused naming it', () => {
    expect(() => loadServeConfig(['--limits-file', '/nonexistent/limits.yaml'], {})).toThrow(
      /^--limits-file \/nonexistent\/limits.yaml: ENOENT/,
    );
  });
  it('reads an api keys file for several companies', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cmn-'));
    const f = join(dir, 'keys.yaml');
    writeFileSync(f, 'keys:\n  - key: company-a-key-123456\n    companyId: 11111111-1111-4111-8111-111111111111\n');
    expect(loadServeConfig(['--api-keys-file', f], {}).apiKeys).toEqual([
      { key: 'company-a-key-123456', companyId: '11111111-1111-4111-8111-111111111111' },
    ]);
    writeFileSync(f, 'keys:\n  - key: short\n    companyId: nope\n');
    expect(() => loadServeConfig(['--api-keys-file', f], {})).toThrow(/keys\[0\]\.key/);
  });
  it('reads key scopes from the api keys file; absent is admin', () => {
    const f = join(mkdtempSync(join(tmpdir(), 'cmn-')), 'keys.yaml');
    const entry = (key: string, extra = '') => `  - { key: ${key}, companyId: 11111111-1111-4111-8111-111111111111${extra} }\n`;
    writeFileSync(
      f,
      'keys:\n' +
        entry('agent-key-0123456789', ', scope: agent') +
        entry('read-key-01234567890', ', scope: read') +
        entry('old-key-012345678901'),
    );
    expect(loadServeConfig(['--api-keys-file', f], {}).apiKeys.map((k) => k.scope ?? 'admin')).toEqual(['agent', 'read', 'admin']);
  });
  it.each([
    [', scope: owner', /keys\[1\]\.scope must be one of admin, agent, read, got 'owner'/],
    [', scope: Admin', /keys\[1\]\.scope must be one of admin, agent, read, got 'Admin'/],
    [', scope: [admin]', /keys\[1\]\.scope must be one of admin, agent, read/],
    [', scopes: read', /keys\[1\] has unknown field\(s\) 'scopes'; allowed: key, companyId, scope/],
  ])('refuses a keys file entry with %s', (extra, re) => {
    const f = join(mkdtempSync(join(tmpdir(), 'cmn-')), 'keys.yaml');
    const entry = (key: string, more = '') => `  - { key: ${key}, companyId: 11111111-1111-4111-8111-111111111111${more} }\n`;
    writeFileSync(f, 'keys:\n' + entry('good-key-0123456789') + entry('secret-key-0123456789', extra));
    let msg = '';
    try {
      loadServeConfig(['--api-keys-file', f], {});
    } catch (e) {
      msg = (e as Error).message;
    }
    expect(msg).toMatch(re);
    expect(msg).not.toContain('secret-key-0123456789');
  });
  it.each([
    [['--port', 'x'], /--port must be an integer/],
    [['--port', '70000'], /between 0 and 65535/],
    [['--kube', 'maybe'], /--kube must be auto, off or on/],
    [['--nope', '1'], /unknown flag --nope/],
    [['--port'], /needs a value/],
    [['--api-key', 'short'], /at least 16/],
    [['--company-id', DEFAULT_COMPANY_ID], /unknown flag --company-id/],
    [['--delivery-timeout', '10s'], /unknown flag --delivery-timeout; known flags: .*--limits-file/],
    [['--service-url', 'http://svc:8080'], /needs --service-api-key-secret/],
    [['--service-url', 'ftp://svc', '--service-api-key', 'k'], /http\(s\) URL/],
    [['--service-api-key-secret', 'Bad/Name'], /<namespace>\/<name>/],
    [['--leader-elect', 'yes'], /true or false/],
    [['--cluster-id', 'prod'], /UUID/],
    [['--egress-allow', '10.0.0.0/33'], /--egress-allow: '10.0.0.0\/33' is neither a CIDR/],
    [['--egress-allow', 'http://hooks'], /--egress-allow: 'http:\/\/hooks'/],
    [['--incident-events-url', 'ftp://pd'], /--incident-events-url must be an http\(s\) URL/],
    [['--opsgenie-api-url', 'api.opsgenie.com'], /--opsgenie-api-url must be an http\(s\) URL/],
    [['--smtp-sender-domains', '[127.0.0.1]'], /--smtp-sender-domains: '\[127\.0\.0\.1\]' is not a domain name or \*\.domain/],
    [['--smtp-sender-domains', '*'], /--smtp-sender-domains: '\*' is not a domain name/],
    [['--smtp-from', 'nobody'], /--smtp-from 'nobody' has no domain/],
  ])('rejects %j', (argv, msg) => {
    expect(() => loadServeConfig(argv as string[], {})).toThrow(ConfigError);
    expect(() => loadServeConfig(argv as string[], {})).toThrow(msg);
  });
  it('--opsgenie-api-url: default the US API, the EU one by flag or environment', () => {
    expect(loadServeConfig([], {}).opsgenieApiUrl).toBe('https://api.opsgenie.com');
    expect(loadServeConfig(['--opsgenie-api-url', 'https://api.eu.opsgenie.com'], {}).opsgenieApiUrl).toBe('https://api.eu.opsgenie.com');
    expect(loadServeConfig([], { CERTMGR_NOTIFY_OPSGENIE_API_URL: 'https://api.eu.opsgenie.com' }).opsgenieApiUrl).toBe(
      'https://api.eu.opsgenie.com',
    );
  });
  it('--smtp-sender-domains repeats; its env form is comma-separated; the default is the domain of --smtp-from', () => {
    expect(loadServeConfig([], {}).smtpSenderDomains).toEqual(['localhost']);
    expect(loadServeConfig(['--smtp-from', 'Certs <certs@Mail.Example.com>'], {}).smtpSenderDomains).toEqual(['mail.example.com']);
    const both = ['--smtp-from', 'c@example.com', '--smtp-sender-domains', 'example.net', '--smtp-sender-domains', '*.example.org'];
    expect(loadServeConfig(both, {}).smtpSenderDomains).toEqual(['example.net', '*.example.org']);
    expect(loadServeConfig([], { CERTMGR_NOTIFY_SMTP_SENDER_DOMAINS: 'example.net, *.example.org' }).smtpSenderDomains).toEqual([
      'example.net',
      '*.example.org',
    ]);
  });
  it('--egress-allow repeats; its env form is comma-separated; the default allows nothing', () => {
    expect(loadServeConfig([], {}).egressAllow).toEqual({ cidrs: [], hosts: [] });
    expect(loadServeConfig(['--egress-allow', '10.0.0.0/8', '--egress-allow', 'hooks.corp.example'], {}).egressAllow).toEqual({
      cidrs: ['10.0.0.0/8'],
      hosts: ['hooks.corp.example'],
    });
    expect(loadServeConfig([], { CERTMGR_NOTIFY_EGRESS_ALLOW: '192.168.0.0/16, *.corp.example,fd00::/8' }).egressAllow).toEqual({
      cidrs: ['192.168.0.0/16', 'fd00::/8'],
      hosts: ['*.corp.example'],
    });
  });
});

describe('loadAgentConfig', () => {
  const required = ['--hub-url', 'https://hub.example:8080', '--api-key-file', '/keys/agent', '--cluster-name', 'prod-eu-1'];

  it('the documented defaults', () => {
    expect(loadAgentConfig(required, {})).toMatchObject({
      hubUrl: 'https://hub.example:8080',
      apiKeyFile: '/keys/agent',
      clusterName: 'prod-eu-1',
      clusterId: undefined,
      port: 8080,
      host: '0.0.0.0',
      leaderElect: true,
      logLevel: 'info',
      maxPendingEvents: 10_000,
      operator: false,
      healthGracePeriodMs: 300_000,
    });
  });

  it('every flag from CERTMGR_NOTIFY_*; flags win', () => {
    const c = loadAgentConfig(['--port', '9100', '--operator'], {
      CERTMGR_NOTIFY_HUB_URL: 'http://hub:8080',
      CERTMGR_NOTIFY_API_KEY_FILE: '/k',
      CERTMGR_NOTIFY_CLUSTER_NAME: 'c1',
      CERTMGR_NOTIFY_CLUSTER_ID: '6F1C2B3A-1111-4C2D-9E8F-0A1B2C3D4E5F',
      CERTMGR_NOTIFY_PORT: '7000',
      CERTMGR_NOTIFY_HEALTH_GRACE_PERIOD: '1s',
      CERTMGR_NOTIFY_HEALTH_UNKNOWN_GRACE_PERIOD: '2s',
      CERTMGR_NOTIFY_HEALTH_ISSUING_GRACE_PERIOD: '3s',
      CERTMGR_NOTIFY_WATCH_NAMESPACE: 'apps',
      CERTMGR_NOTIFY_STATE_NAMESPACE: 'certmgr-notify',
      CERTMGR_NOTIFY_INSTANCE_ID: 'agent-0',
      CERTMGR_NOTIFY_LEADER_ELECT: 'false',
      CERTMGR_NOTIFY_MAX_PENDING_EVENTS: '50',
    });
    expect(c).toMatchObject({
      hubUrl: 'http://hub:8080',
      clusterId: '6f1c2b3a-1111-4c2d-9e8f-0a1b2c3d4e5f',
      port: 9100,
      healthGracePeriodMs: 1000,
      healthUnknownGracePeriodMs: 2000,
      healthIssuingGracePeriodMs: 3000,
      watchNamespace: 'apps',
      stateNamespace: 'certmgr-notify',
      instanceId: 'agent-0',
      leaderElect: false,
      maxPendingEvents: 50,
      operator: true,
    });
  });

  it.each([
    [['--operator'], true],
    [['--operator=true'], true],
    [['--operator=false'], false],
    [[], false],
  ])('%j → operator %s (a bare --operator does not take the next argument)', (flags, want) => {
    expect(loadAgentConfig([...flags, ...required], {}).operator).toBe(want);
  });

  it.each([
    [[], '--hub-url is required (or CERTMGR_NOTIFY_HUB_URL)'],
    [['--hub-url', 'http://h', '--cluster-name', 'c'], '--api-key-file is required'],
    [['--hub-url', 'http://h', '--api-key-file', '/k'], '--cluster-name is required'],
    [[...required, '--hub-url', 'ftp://h'], '--hub-url must be an http(s) URL'],
    [[...required, '--cluster-id', 'nope'], '--cluster-id must be a UUID'],
    [[...required, '--max-pending-events', '0'], '--max-pending-events must be between 1 and'],
    [[...required, '--operator=maybe'], '--operator must be true or false'],
    [[...required, '--store', 'sqlite::memory:'], 'unknown flag --store'],
  ])('%j is refused naming the flag', (argv, message) => {
    expect(() => loadAgentConfig(argv, {})).toThrow(ConfigError);
    expect(() => loadAgentConfig(argv, {})).toThrow(message);
  });
});

describe('serve: the pending bound', () => {
  it('defaults: 10000 pending events', () => {
    expect(loadServeConfig([], {})).toMatchObject({ kubeOptions: { maxPendingEvents: 10_000 } });
  });
  it.each([
    ['--emitter-expiry', 'off'],
    ['--expiry-config-poll', '300'],
  ])('%s is not a flag', (flag, value) => {
    expect(() => loadServeConfig([flag, value], {})).toThrow(`unknown flag ${flag}`);
  });
});

describe('serve: the console', () => {
  it('the console: ui next to the bundle, <repo>/dist/ui from source', () => {
    expect(defaultConsoleDir('file:///app/dist/certmgr-notify.mjs')).toBe('/app/dist/ui');
    expect(defaultConsoleDir('file:///repo/src/config.ts')).toBe('/repo/dist/ui');
    expect(loadServeConfig([], {}).consoleDir).toBe(join(new URL('..', import.meta.url).pathname, 'dist', 'ui'));
  });

  it('--public-url: an http(s) URL without trailing slash, credentials, query or fragment; absent by default', () => {
    expect(loadServeConfig([], {}).publicUrl).toBeUndefined();
    expect(loadServeConfig(['--public-url', 'https://hub.example.com/'], {}).publicUrl).toBe('https://hub.example.com');
    expect(loadServeConfig([], { CERTMGR_NOTIFY_PUBLIC_URL: 'http://hub.example.com:8080/notify//' }).publicUrl).toBe(
      'http://hub.example.com:8080/notify',
    );
    for (const bad of [
      'hub.example.com',
      'ftp://hub.example.com',
      'https://u:p@hub.example.com',
      'https://hub.example.com/?a=1',
      'https://hub/#x',
    ])
      expect(() => loadServeConfig(['--public-url', bad], {}), bad).toThrow(ConfigError);
    expect(() => loadServeConfig(['--public-url', 'nope'], {})).toThrow(/--public-url must be an http\(s\) URL/);
  });
});

describe("emitter durations: agent flags and keys of serve's limits file", () => {
  const agentRequired = ['--hub-url', 'https://hub.example:8080', '--api-key-file', '/keys/agent', '--cluster-name', 'prod-eu-1'];
  const both = (flag: string, key: string, v: string) => [
    loadServeConfig(limits(`${key}: '${v}'\n`), {}).kubeOptions,
    loadAgentConfig([...agentRequired, `--${flag}`, v], {}),
  ];
  it('absent: the defaults the emitter would apply, the same for serve and the agent', () => {
    const s = loadServeConfig([], {}).kubeOptions;
    const a = loadAgentConfig(agentRequired, {});
    for (const c of [s, a])
      expect(c).toMatchObject({
        healthRenewalOverdueGraceMs: 3_600_000,
        servingProbeIntervalMs: DEFAULT_SERVING_PROBE_INTERVAL_MS,
        healthGracePeriodMs: 300_000,
      });
  });
  it.each([
    ['health-renewal-overdue-grace', 'healthRenewalOverdueGrace', '1h', 3_600_000],
    ['health-renewal-overdue-grace', 'healthRenewalOverdueGrace', '1h30m', 5_400_000],
    ['health-renewal-overdue-grace', 'healthRenewalOverdueGrace', '48h', 172_800_000],
    ['health-grace-period', 'healthGracePeriod', '500ms', 500],
    ['health-unknown-grace-period', 'healthUnknownGracePeriod', '10m', 600_000],
    ['health-issuing-grace-period', 'healthIssuingGracePeriod', '0', 0],
    ['serving-probe-interval', 'servingProbeInterval', '5m', 300_000],
    ['serving-probe-interval', 'servingProbeInterval', '24h', 86_400_000],
    ['serving-probe-interval', 'servingProbeInterval', '0', 0],
    ['serving-probe-interval', 'servingProbeInterval', '0s', 0],
  ])('--%s / %s %s → %d ms', (flag, key, v, ms) => {
    const [s, a] = both(flag, key, v);
    const field = {
      'health-renewal-overdue-grace': 'healthRenewalOverdueGraceMs',
      'health-grace-period': 'healthGracePeriodMs',
      'health-unknown-grace-period': 'healthUnknownGracePeriodMs',
      'health-issuing-grace-period': 'healthIssuingGracePeriodMs',
      'serving-probe-interval': 'servingProbeIntervalMs',
    }[flag] as 'healthGracePeriodMs';
    expect([s![field], a![field]]).toEqual([ms, ms]);
  });
  it('the agent reads them from its environment too', () => {
    expect(loadAgentConfig(agentRequired, { CERTMGR_NOTIFY_HEALTH_RENEWAL_OVERDUE_GRACE: '6h' }).healthRenewalOverdueGraceMs).toBe(
      21_600_000,
    );
    expect(loadAgentConfig(agentRequired, { CERTMGR_NOTIFY_SERVING_PROBE_INTERVAL: '2m' }).servingProbeIntervalMs).toBe(120_000);
  });
  it("the agent's help names the default from the prober", () => {
    const help = AGENT_FLAGS.find((f) => f.name === 'serving-probe-interval')!.help;
    expect(help).toContain(`(default ${formatDuration(DEFAULT_SERVING_PROBE_INTERVAL_MS)})`);
  });
  it.each([
    [
      'health-renewal-overdue-grace',
      'healthRenewalOverdueGrace',
      '3600',
      "must be a duration such as 500ms, 30s, 5m, 1h30m or 24h, got '3600'",
    ],
    ['health-renewal-overdue-grace', 'healthRenewalOverdueGrace', '2d', 'must be a duration'],
    ['health-renewal-overdue-grace', 'healthRenewalOverdueGrace', '30s', "must be between 1m and 720h, got '30s'"],
    ['health-grace-period', 'healthGracePeriod', '1000', "must be a duration such as 500ms, 30s, 5m, 1h30m or 24h, got '1000'"],
    ['serving-probe-interval', 'servingProbeInterval', '5 m', 'must be a duration'],
    ['serving-probe-interval', 'servingProbeInterval', '-1m', 'must be a duration'],
    ['serving-probe-interval', 'servingProbeInterval', '5s', "must be 0 (off) or between 10s and 24h, got '5s'"],
    ['serving-probe-interval', 'servingProbeInterval', '25h', "must be 0 (off) or between 10s and 24h, got '25h'"],
  ])('--%s / %s %j is refused naming the flag or the key, and the form', (flag, key, v, message) => {
    expect(() => loadAgentConfig([...agentRequired, `--${flag}`, v], {})).toThrow(`--${flag} ${message}`);
    const args = limits(`${key}: '${v}'\n`);
    expect(() => loadServeConfig(args, {})).toThrow(`--limits-file ${args[1]}: ${key} ${message}`);
  });
});
