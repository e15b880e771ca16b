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
  loadAgentConfig,
  loadServeConfig,
} from '../src/config.js';
import { DEFAULT_SERVING_PROBE_INTERVAL_MS } from '../src/emitter/serving/prober.js';
import { formatInterval } from '../src/validation/interval.js';

describe('loadServeConfig', () => {
  it('has the documented defaults', () => {
    const c = loadServeConfig([], {});
    expect(c).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      store: 'sqlite:./data/certmgr-notify.db',
      kube: 'auto',
      apiKeys: [],
      apiKeyPath: './data/api-key',
    });
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
  it('per-company quotas: defaults 1000 routers and 200 integrations, from flags or environment', () => {
    expect(loadServeConfig([], {})).toMatchObject({ maxRoutersPerCompany: 1000, maxIntegrationsPerCompany: 200 });
    const c = loadServeConfig(['--max-routers-per-company', '50'], {
      CERTMGR_NOTIFY_MAX_INTEGRATIONS_PER_COMPANY: '7',
      CERTMGR_NOTIFY_MAX_ROUTERS_PER_COMPANY: '9',
    });
    expect(c).toMatchObject({ maxRoutersPerCompany: 50, maxIntegrationsPerCompany: 7 });
  });
  it('--expiry-scan-interval: the hub scan, default 60000 ms, bounded', () => {
    expect(loadServeConfig([], {})).toMatchObject({ expiryScanIntervalMs: 60_000 });
    expect(loadServeConfig([], { CERTMGR_NOTIFY_EXPIRY_SCAN_INTERVAL: '5000' })).toMatchObject({ expiryScanIntervalMs: 5000 });
    expect(() => loadServeConfig(['--expiry-scan-interval', '10'], {})).toThrow(ConfigError);
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
    [['--company-id', 'x'], /UUID/],
    [['--service-url', 'http://svc:8080'], /needs --service-api-key-secret/],
    [['--service-url', 'ftp://svc', '--service-api-key', 'k'], /http\(s\) URL/],
    [['--service-api-key-secret', 'Bad/Name'], /<namespace>\/<name>/],
    [['--leader-elect', 'yes'], /true or false/],
    [['--cluster-id', 'prod'], /UUID/],
    [['--max-routers-per-company', '0'], /--max-routers-per-company must be between 1 and 100000/],
    [['--max-integrations-per-company', 'many'], /--max-integrations-per-company must be an integer/],
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
      healthGracePeriodMs: undefined,
    });
  });

  it('every flag from CERTMGR_NOTIFY_*; flags win', () => {
    const c = loadAgentConfig(['--port', '9100', '--operator'], {
      CERTMGR_NOTIFY_HUB_URL: 'http://hub:8080',
      CERTMGR_NOTIFY_API_KEY_FILE: '/k',
      CERTMGR_NOTIFY_CLUSTER_NAME: 'c1',
      CERTMGR_NOTIFY_CLUSTER_ID: '6F1C2B3A-1111-4C2D-9E8F-0A1B2C3D4E5F',
      CERTMGR_NOTIFY_PORT: '7000',
      CERTMGR_NOTIFY_HEALTH_GRACE_PERIOD: '1000',
      CERTMGR_NOTIFY_HEALTH_UNKNOWN_GRACE_PERIOD: '2000',
      CERTMGR_NOTIFY_HEALTH_ISSUING_GRACE_PERIOD: '3000',
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
  it('--console-dir: flag or environment; default ui next to the bundle, <repo>/dist/ui from source', () => {
    expect(loadServeConfig(['--console-dir', '/srv/ui'], {}).consoleDir).toBe('/srv/ui');
    expect(loadServeConfig([], { CERTMGR_NOTIFY_CONSOLE_DIR: '/env/ui' }).consoleDir).toBe('/env/ui');
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

describe('--health-renewal-overdue-grace: one flag, serve and agent', () => {
  const agentRequired = ['--hub-url', 'https://hub.example:8080', '--api-key-file', '/keys/agent', '--cluster-name', 'prod-eu-1'];
  it('absent: undefined (the emitter’s default, 1h, applies); a duration such as 1h, 30m, 1h30m, 2d; flag or environment', () => {
    expect(loadServeConfig([], {}).kubeOptions.healthRenewalOverdueGraceMs).toBeUndefined();
    expect(loadAgentConfig(agentRequired, {}).healthRenewalOverdueGraceMs).toBeUndefined();
    for (const [v, ms] of [
      ['1h', 3_600_000],
      ['30m', 1_800_000],
      ['1h30m', 5_400_000],
      ['2d', 172_800_000],
    ] as const) {
      expect(loadServeConfig(['--health-renewal-overdue-grace', v], {}).kubeOptions.healthRenewalOverdueGraceMs).toBe(ms);
      expect(loadAgentConfig([...agentRequired, '--health-renewal-overdue-grace', v], {}).healthRenewalOverdueGraceMs).toBe(ms);
    }
    expect(loadAgentConfig(agentRequired, { CERTMGR_NOTIFY_HEALTH_RENEWAL_OVERDUE_GRACE: '6h' }).healthRenewalOverdueGraceMs).toBe(
      21_600_000,
    );
  });
  it.each([
    ['3600', "must be a duration of whole units d, h, m, s in that order (e.g. 30m, 1h, 1h30m, 1d), got '3600'"],
    ['1.5h', 'must be a duration'],
    ['30m1h', 'must be a duration'],
    ['', 'must be a duration'],
    ['30s', 'must be between 1m and 30d, got 30s'],
    ['31d', 'must be between 1m and 30d, got 31d'],
  ])('%j is refused naming the flag and the form', (v, message) => {
    for (const load of [
      () => loadServeConfig(['--health-renewal-overdue-grace', v], {}),
      () => loadAgentConfig([...agentRequired, '--health-renewal-overdue-grace', v], {}),
    ]) {
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(`--health-renewal-overdue-grace ${message}`);
    }
  });
});

describe('--serving-probe-interval: one flag, serve and agent', () => {
  const agentRequired = ['--hub-url', 'https://hub.example:8080', '--api-key-file', '/keys/agent', '--cluster-name', 'prod-eu-1'];
  const both = (args: string[], env: NodeJS.ProcessEnv = {}) => [
    loadServeConfig(args, env).kubeOptions.servingProbeIntervalMs,
    loadAgentConfig([...agentRequired, ...args], env).servingProbeIntervalMs,
  ];
  it('absent: undefined (the emitter’s default applies); a duration; 0 or 0s turns probing off; flag or environment', () => {
    expect(both([])).toEqual([undefined, undefined]);
    for (const [v, ms] of [
      ['5m', 300_000],
      ['10s', 10_000],
      ['1h30m', 5_400_000],
      ['1d', 86_400_000],
      ['0', 0],
      ['0s', 0],
    ] as const)
      expect(both(['--serving-probe-interval', v])).toEqual([ms, ms]);
    expect(both([], { CERTMGR_NOTIFY_SERVING_PROBE_INTERVAL: '2m' })).toEqual([120_000, 120_000]);
  });
  it('the help text names the default from the prober', () => {
    const help = [...SERVE_FLAGS, ...AGENT_FLAGS].filter((f) => f.name === 'serving-probe-interval').map((f) => f.help);
    expect(help).toHaveLength(2);
    for (const h of help) expect(h).toContain(`(default ${formatInterval(DEFAULT_SERVING_PROBE_INTERVAL_MS)})`);
  });
  it.each([
    ['300', "must be 0 (off) or a duration of whole units d, h, m, s in that order (e.g. 30s, 5m, 1h), got '300'"],
    ['5 m', 'must be 0 (off) or a duration'],
    ['', 'must be 0 (off) or a duration'],
    ['-1m', 'must be 0 (off) or a duration'],
    ['5s', 'must be 0 (off) or between 10s and 1d, got 5s'],
    ['2d', 'must be 0 (off) or between 10s and 1d, got 2d'],
  ])('%j is refused naming the flag and the form', (v, message) => {
    for (const load of [
      () => loadServeConfig(['--serving-probe-interval', v], {}),
      () => loadAgentConfig([...agentRequired, '--serving-probe-interval', v], {}),
    ]) {
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(`--serving-probe-interval ${message}`);
    }
  });
});
