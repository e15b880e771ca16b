/**
 * The chart's observability objects (docs/observability.md): Grafana dashboard ConfigMap, PrometheusRule,
 * ServiceMonitor, PodDisruptionBudget and NetworkPolicy. `helm lint`/`helm template` with the features on; the
 * PDB, NetworkPolicy and dashboard ConfigMap accepted by a REAL apiserver (`kubectl apply --dry-run=server`); the
 * Prometheus Operator kinds (no CRD there) validated by structure, the rules by `promtool check rules` and
 * `promtool test rules` (test/charts/rules/*.test.yaml: every alert fires and stays quiet); and every metric
 * name the dashboard and the rules use is a family of a real /metrics scrape of a started hub (serve --kube on
 * against the apiserver, so the emitter's metrics are there too).
 *
 * promtool comes from Debian's `prometheus` package (.ci/run installs it); without it this file FAILS.
 */
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHART, LazyKubeEnv, documents, helmEnv, helmTemplate, run } from './helm.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { issuerNotReady } from '../fixtures/events.js';
import { installCrds } from '../operator/support.js';
import { startTestService, type TestService } from '../support/service.js';
import { ensureKubeTools, waitFor, type KubeEnv } from '../support/kube.js';
import { limitsFile } from '../support/limits.js';

const RULE_TESTS = join(REPO_ROOT, 'test', 'charts', 'rules');
const PROMTOOL = process.env['PROMTOOL'] ?? '/usr/bin/promtool';

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: unknown;
}
interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
interface Panel {
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: { expr: string; datasource: { uid: string } }[];
}

const ALL_ON = [
  '--set',
  'metrics.prometheusRule.enabled=true',
  '--set',
  'metrics.serviceMonitor.enabled=true',
  '--set',
  'metrics.grafanaDashboard.enabled=true',
  '--set',
  'networkPolicy.enabled=true',
];
/** A hub with two replicas (PostgreSQL): the PDB's auto mode renders it. */
const TWO_REPLICAS = ['--set', 'replicaCount=2', '--set', 'store.url=postgres://notify@db:5432/notify'];
const AGENT = [
  '--set',
  'mode=agent',
  '--set',
  'clusterName=prod-eu-1',
  '--set',
  'agent.hubUrl=https://hub.example.com',
  '--set',
  'agent.apiKey.existingSecret=agent-key',
];

/** Metric names in a PromQL expression; a histogram's series suffixes name their family. */
function metricNames(expr: string): string[] {
  return [...new Set([...expr.matchAll(/\bcertmgr_notify_[a-z0-9_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')))];
}

describe('Helm chart observability objects', () => {
  let helm: string;
  let kubectl: string;
  const kube = new LazyKubeEnv();
  let svc: TestService | undefined;

  beforeAll(async () => {
    ({ helm, kubectl } = await ensureKubeTools());
  }, 10 * 60_000);
  afterAll(async () => {
    await svc?.close();
    await kube.stop();
  });
  const kubeEnv = (): Promise<KubeEnv> => kube.get();

  const render = (...args: string[]): Promise<string> => helmTemplate(helm, 'notify', args);
  /** the limits file's ConfigMap is always rendered (serve's configuration): not one of the observability objects */
  const isLimits = (m: Manifest): boolean => m.kind === 'ConfigMap' && String(m.metadata?.name ?? '').endsWith('-limits');
  const template = async (...args: string[]): Promise<Manifest[]> => documents<Manifest>(await render(...args)).filter((m) => !isLimits(m));
  const find = (ms: Manifest[], kind: string) => ms.filter((m) => m.kind === kind);
  const one = <T = Manifest>(ms: Manifest[], kind: string): T => {
    const found = find(ms, kind);
    expect(found, kind).toHaveLength(1);
    return found[0] as unknown as T;
  };
  const rulesOf = (ms: Manifest[]): Rule[] =>
    one<{ spec: { groups: { rules: Rule[] }[] } }>(ms, 'PrometheusRule').spec.groups.flatMap((g) => g.rules);
  const dashboard = () =>
    JSON.parse(readFileSync(join(CHART, 'dashboards', 'certmgr-notify.json'), 'utf8')) as {
      templating: { list: { name: string; type: string; query: unknown }[] };
      panels: Panel[];
    };

  it('helm lint --strict passes with every observability feature on (standalone, hub with two replicas, agent)', async () => {
    for (const extra of [[], TWO_REPLICAS, AGENT]) {
      const { stdout } = await run(helm, ['lint', '--strict', CHART, ...ALL_ON, ...extra], { env: helmEnv });
      expect(stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  it('nothing new by default: no PDB for one replica, the Prometheus Operator kinds, dashboard and NetworkPolicy are opt-in', async () => {
    const kinds = (await template()).map((m) => m.kind);
    for (const k of ['PodDisruptionBudget', 'PrometheusRule', 'ServiceMonitor', 'NetworkPolicy', 'ConfigMap'])
      expect(kinds).not.toContain(k);
  });

  it('PodDisruptionBudget: auto with replicaCount > 1 (minAvailable 1), maxUnavailable instead, off, and refused when it would block drains', async () => {
    const pdb = one<{ spec: Record<string, unknown> }>(await template(...TWO_REPLICAS), 'PodDisruptionBudget');
    expect(pdb.spec).toEqual({
      minAvailable: 1,
      selector: { matchLabels: { 'app.kubernetes.io/name': 'certmgr-notify', 'app.kubernetes.io/instance': 'rel' } },
    });
    const max = one<{ spec: Record<string, unknown> }>(
      await template('--set', 'podDisruptionBudget.enabled=true', '--set', 'podDisruptionBudget.maxUnavailable=1'),
      'PodDisruptionBudget',
    );
    expect(max.spec).toMatchObject({ maxUnavailable: 1 });
    expect(max.spec).not.toHaveProperty('minAvailable');
    expect(find(await template(...TWO_REPLICAS, '--set', 'podDisruptionBudget.enabled=false'), 'PodDisruptionBudget')).toHaveLength(0);
    await expect(render('--set', 'podDisruptionBudget.enabled=true')).rejects.toThrow(
      /minAvailable 1 with replicaCount 1 blocks every voluntary eviction/,
    );
  });

  it('ServiceMonitor: scrapes /metrics of the http port (serve modes) or of the agent metrics Service', async () => {
    const sm = one<{ spec: { selector: { matchLabels: Record<string, string> }; endpoints: Record<string, unknown>[] } }>(
      await template(...ALL_ON, '--set', 'metrics.serviceMonitor.labels.release=kps'),
      'ServiceMonitor',
    );
    expect(sm.spec.endpoints).toEqual([{ port: 'http', path: '/metrics', interval: '30s', scrapeTimeout: '10s' }]);
    const ms = await template(...ALL_ON, ...AGENT);
    const agentSm = one<{ spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] } }>(
      ms,
      'ServiceMonitor',
    );
    expect(agentSm.spec.endpoints[0]!.port).toBe('metrics');
    // the selector selects exactly the Service that has that port
    const services = find(ms, 'Service') as unknown as {
      metadata: { labels: Record<string, string> };
      spec: { ports: { name: string }[] };
    }[];
    const selected = services.filter((s) =>
      Object.entries(agentSm.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels[k] === v),
    );
    expect(selected.map((s) => s.spec.ports.map((p) => p.name))).toEqual([['metrics']]);
    expect(
      (one(await template(...ALL_ON, '--set', 'metrics.serviceMonitor.labels.release=kps'), 'ServiceMonitor') as Manifest).metadata.labels,
    ).toMatchObject({
      release: 'kps',
    });
    await expect(render(...ALL_ON, ...AGENT, '--set', 'agent.metricsService.enabled=false')).rejects.toThrow(
      /needs agent.metricsService.enabled/,
    );
  });

  it('PrometheusRule: the alerts of each mode, each with severity, summary, description and a runbook section that exists', async () => {
    const runbooks = readFileSync(join(REPO_ROOT, 'docs', 'runbooks.md'), 'utf8');
    const anchors = new Set([...runbooks.matchAll(/^## (\S+)$/gm)].map((m) => m[1]!.toLowerCase()));
    const standalone = rulesOf(await template(...ALL_ON));
    expect(standalone.map((r) => r.alert).sort()).toEqual(
      [
        'CertmgrNotifyAgentSilent',
        'CertmgrNotifyCertificateExpiringUnrouted',
        'CertmgrNotifyDeliveriesDeadLettered',
        'CertmgrNotifyDeliveryQueueGrowing',
        'CertmgrNotifyDeliveryQueueStuck',
        'CertmgrNotifyEmitterNotSyncing',
      ].sort(),
    );
    for (const r of standalone) {
      expect(['warning', 'critical']).toContain(r.labels.severity);
      expect(r.annotations.summary).toBeTruthy();
      expect(r.annotations.description).toBeTruthy();
      const url = new URL(r.annotations.runbook_url!);
      expect(url.href.startsWith('https://github.com/certmgr-notify/certmgr-notify/blob/main/docs/runbooks.md#')).toBe(true);
      expect(anchors, `docs/runbooks.md has a section ## ${r.alert}`).toContain(url.hash.slice(1));
      expect(url.hash.slice(1)).toBe(r.alert.toLowerCase());
      // every expression is scoped to this release's series
      expect(r.expr).toContain('namespace="notify",job="rel-certmgr-notify"');
    }
    // a hub without its own emitter has no emitter to watch; an agent only has the emitter
    const hub = rulesOf(await template(...ALL_ON, '--set', 'mode=hub'));
    expect(hub.map((r) => r.alert)).not.toContain('CertmgrNotifyEmitterNotSyncing');
    expect(hub).toHaveLength(5);
    const agent = rulesOf(await template(...ALL_ON, ...AGENT));
    expect(agent.map((r) => r.alert)).toEqual(['CertmgrNotifyEmitterNotSyncing']);
    expect(agent[0]!.expr).toContain('job="rel-certmgr-notify-metrics"');
    // values: base URL, selector, extra labels, severity
    const custom = rulesOf(
      await template(
        ...ALL_ON,
        '--set',
        'metrics.prometheusRule.runbookBaseUrl=https://wiki.example.com/runbooks',
        '--set',
        'metrics.prometheusRule.selector=cluster="eu"',
        '--set',
        'metrics.prometheusRule.additionalLabels.team=platform',
        '--set',
        'metrics.prometheusRule.agentSilent.severity=critical',
      ),
    );
    const silent = custom.find((r) => r.alert === 'CertmgrNotifyAgentSilent')!;
    expect(silent.labels).toEqual({ severity: 'critical', team: 'platform' });
    expect(silent.annotations.runbook_url).toBe('https://wiki.example.com/runbooks#certmgrnotifyagentsilent');
    expect(silent.expr).toBe('max by (namespace, job) (certmgr_notify_clusters{cluster="eu",state="silent"}) > 0');
    await expect(render(...ALL_ON, '--set', 'metrics.prometheusRule.runbookBaseUrl=ftp://x')).rejects.toThrow(/runbookBaseUrl/);
  });

  it('promtool check rules and promtool test rules pass on the rendered groups (every alert fires and stays quiet in its tests)', async () => {
    expect(existsSync(PROMTOOL), `${PROMTOOL} is missing: apt-get install -y --no-install-recommends prometheus`).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'cmn-rules-'));
    const groups = one<{ spec: { groups: unknown[] } }>(await template(...ALL_ON), 'PrometheusRule').spec.groups;
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));
    const check = await run(PROMTOOL, ['check', 'rules', join(dir, 'rules.yaml')]);
    expect(check.stdout).toMatch(/SUCCESS: 6 rules found/);
    const tests = readdirSync(RULE_TESTS).filter((f) => f.endsWith('.test.yaml'));
    expect(tests.length).toBeGreaterThan(0);
    const tested = new Set<string>();
    for (const f of tests) {
      copyFileSync(join(RULE_TESTS, f), join(dir, f));
      const doc = parseAllDocuments(readFileSync(join(RULE_TESTS, f), 'utf8'))[0]!.toJS() as {
        tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
      };
      for (const t of doc.tests) for (const a of t.alert_rule_test) tested.add(`${a.alertname}:${a.exp_alerts.length ? 'fires' : 'quiet'}`);
      const out = await run(PROMTOOL, ['test', 'rules', f], { cwd: dir }).catch((e: { stdout: string; stderr: string }) => {
        throw new Error(`promtool test rules ${f} failed:\n${e.stdout}\n${e.stderr}`);
      });
      expect(out.stdout).toMatch(/SUCCESS/);
    }
    const alerts = rulesOf(await template(...ALL_ON)).map((r) => r.alert);
    for (const a of alerts) {
      expect(tested, `a promtool test where ${a} fires`).toContain(`${a}:fires`);
      expect(tested, `a promtool test where ${a} stays quiet`).toContain(`${a}:quiet`);
    }
  }, 60_000);

  it('Grafana dashboard: a ConfigMap with the sidecar label holding the JSON, a ${datasource} variable every query uses', async () => {
    const cm = one<Manifest & { data: Record<string, string> }>(
      await template(
        ...ALL_ON,
        '--set',
        'metrics.grafanaDashboard.namespace=monitoring',
        '--set',
        'metrics.grafanaDashboard.annotations.grafana_folder=tls',
      ),
      'ConfigMap',
    );
    expect(cm.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(cm.metadata.namespace).toBe('monitoring');
    expect(cm.metadata.annotations).toEqual({ grafana_folder: 'tls' });
    const fromChart = JSON.parse(cm.data['certmgr-notify.json']!) as ReturnType<typeof dashboard>;
    expect(fromChart).toEqual(dashboard());
    const d = dashboard();
    expect(d.templating.list.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const graphs = d.panels.filter((p) => p.type !== 'row');
    expect(graphs.length).toBeGreaterThanOrEqual(15);
    for (const p of graphs) {
      expect(p.datasource?.uid, p.title).toBe('${datasource}');
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets!) {
        expect(t.datasource.uid).toBe('${datasource}');
        expect(metricNames(t.expr).length, `${p.title}: ${t.expr}`).toBeGreaterThan(0);
      }
    }
    // each has a panel
    const used = new Set(graphs.flatMap((p) => p.targets!.flatMap((t) => metricNames(t.expr))));
    for (const m of [
      'certmgr_notify_events_received_total',
      'certmgr_notify_router_matches_total',
      'certmgr_notify_deliveries_total',
      'certmgr_notify_delivery_attempt_duration_seconds',
      'certmgr_notify_delivery_dead_letters_total',
      'certmgr_notify_delivery_queue_depth',
      'certmgr_notify_delivery_oldest_due_seconds',
      'certmgr_notify_clusters',
      'certmgr_notify_emitter_last_sync_timestamp_seconds',
      'certmgr_notify_inventory_certificates_by_days_left',
      'certmgr_notify_cel_evaluation_errors_total',
      'certmgr_notify_egress_refused_total',
    ])
      expect(used, m).toContain(m);
    // the dashboard is not rendered unless enabled (checked above) and the custom label replaces the default
    const custom = one<Manifest>(
      await template(
        '--set',
        'metrics.grafanaDashboard.enabled=true',
        '--set',
        'metrics.grafanaDashboard.labels.grafana_dashboard=null',
        '--set',
        'metrics.grafanaDashboard.labels.dash=yes',
      ),
      'ConfigMap',
    );
    expect(custom.metadata.labels).toMatchObject({ dash: 'yes' });
    expect(custom.metadata.labels).not.toHaveProperty('grafana_dashboard');
  });

  it('NetworkPolicy: the http port from the configured peers, the webhook port, DNS, the apiserver, integrations and extra egress', async () => {
    const np = one<{
      spec: {
        policyTypes: string[];
        ingress: { from?: unknown[]; ports: { port: string | number }[] }[];
        egress: { to?: unknown[]; ports?: { port: number }[] }[];
      };
    }>(
      await template(
        ...ALL_ON,
        '--set',
        'webhook.enabled=true',
        '--set-json',
        'networkPolicy.ingressFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]',
        '--set-json',
        'networkPolicy.extraEgress=[{"to":[{"ipBlock":{"cidr":"10.0.0.5/32"}}],"ports":[{"port":5432,"protocol":"TCP"}]}]',
        '--set-json',
        'networkPolicy.egress.integrations.ports=[443]',
      ),
      'NetworkPolicy',
    );
    expect(np.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(np.spec.ingress).toEqual([
      {
        ports: [{ port: 'http', protocol: 'TCP' }],
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
      },
      { ports: [{ port: 'webhook', protocol: 'TCP' }] },
    ]);
    const ports = np.spec.egress.map((e) => (e.ports ?? []).map((p) => p.port));
    expect(ports).toEqual([[53, 53], [443, 6443], [443], [5432]]);
    expect(np.spec.egress[3]!.to).toEqual([{ ipBlock: { cidr: '10.0.0.5/32' } }]);
    // IPv6 (and dual-stack) clusters reach the apiserver and integrations too
    const anywhere = [{ ipBlock: { cidr: '0.0.0.0/0' } }, { ipBlock: { cidr: '::/0' } }];
    expect(np.spec.egress[1]!.to).toEqual(anywhere);
    expect(np.spec.egress[2]!.to).toEqual(anywhere);
    // no DNS, apiserver or integrations rule when their lists are emptied
    const bare = one<{ spec: { egress: unknown[] | null } }>(
      await template(
        '--set',
        'networkPolicy.enabled=true',
        '--set',
        'networkPolicy.egress.dns=false',
        '--set-json',
        'networkPolicy.egress.kubeApiServer.cidrs=[]',
        '--set-json',
        'networkPolicy.egress.integrations.ports=[]',
      ),
      'NetworkPolicy',
    );
    expect(bare.spec.egress ?? []).toEqual([]);
  });

  it('the PDB, NetworkPolicy and dashboard ConfigMap are accepted by a real apiserver (helm template --validate with its capabilities, kubectl apply --dry-run=server); the Prometheus Operator kinds are valid by structure', async () => {
    const kube = await kubeEnv();
    // no Prometheus Operator CRDs on this apiserver: those two kinds are checked by structure here, the rules by promtool
    const operatorKinds = (await template(...ALL_ON, ...TWO_REPLICAS)).filter((m) => m.apiVersion === 'monitoring.coreos.com/v1');
    expect(operatorKinds.map((m) => m.kind).sort()).toEqual(['PrometheusRule', 'ServiceMonitor']);
    for (const m of operatorKinds) {
      expect(m.metadata).toMatchObject({ name: 'rel-certmgr-notify', namespace: 'notify' });
      expect(Object.keys(m).sort()).toEqual(['apiVersion', 'kind', 'metadata', 'spec']);
    }
    // rendered against the apiserver: its API versions pick the PDB's (policy/v1 from Kubernetes 1.21, else v1beta1)
    const { stdout } = await run(
      helm,
      [
        'template',
        'rel',
        CHART,
        '--namespace',
        'default',
        '--validate',
        '--kubeconfig',
        kube.kubeconfigPath,
        '--set',
        'networkPolicy.enabled=true',
        '--set',
        'metrics.grafanaDashboard.enabled=true',
        ...TWO_REPLICAS,
      ],
      { env: helmEnv, maxBuffer: 32 << 20 },
    );
    const versions = (await run(kubectl, ['--kubeconfig', kube.kubeconfigPath, 'api-versions'])).stdout.split('\n');
    const objs = parseAllDocuments(stdout)
      .map((d) => d.toJS() as Manifest | null)
      .filter((m): m is Manifest => Boolean(m) && ['PodDisruptionBudget', 'NetworkPolicy', 'ConfigMap'].includes(m!.kind) && !isLimits(m!));
    expect(objs.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'NetworkPolicy', 'PodDisruptionBudget']);
    expect(objs.find((o) => o.kind === 'PodDisruptionBudget')!.apiVersion).toBe(
      versions.includes('policy/v1') ? 'policy/v1' : 'policy/v1beta1',
    );
    const dir = mkdtempSync(join(tmpdir(), 'cmn-obs-'));
    const file = join(dir, 'obs.yaml');
    writeFileSync(file, objs.map((o) => stringify(o)).join('---\n'));
    const out = await run(kubectl, ['--kubeconfig', kube.kubeconfigPath, 'apply', '--dry-run=server', '-f', file], { env: process.env });
    expect(out.stdout).toMatch(/poddisruptionbudget.policy\/rel-certmgr-notify created \(server dry run\)/);
    expect(out.stdout).toMatch(/networkpolicy.networking.k8s.io\/rel-certmgr-notify created \(server dry run\)/);
    expect(out.stdout).toMatch(/configmap\/rel-certmgr-notify-dashboard created \(server dry run\)/);
    // and the dry-run does validate: the same PDB with both fields set is refused
    const pdb = objs.find((o) => o.kind === 'PodDisruptionBudget')!;
    writeFileSync(file, stringify({ ...pdb, spec: { ...(pdb['spec'] as object), maxUnavailable: 1 } }));
    await expect(run(kubectl, ['--kubeconfig', kube.kubeconfigPath, 'apply', '--dry-run=server', '-f', file])).rejects.toThrow(
      /minAvailable/,
    );
  }, 180_000);

  it('every metric the dashboard and the rules use is a family of a real /metrics scrape (serve --kube on), and the emitter heartbeat advances', async () => {
    const kube = await kubeEnv();
    await installCrds(kube.kubeConfig());
    await installCertManagerCrds(kube.kubeConfig());
    process.env['KUBECONFIG'] = kube.kubeconfigPath; // this worker only: the in-process service's Kubernetes client
    svc = await startTestService('sqlite', [
      '--kube',
      'on',
      '--lease-namespace',
      'default',
      '--cluster-name',
      'obs',

      ...limitsFile({ leaseDuration: '3s', renewDeadline: '2s', retryPeriod: '500ms' }),
    ]);
    // exercise it a little: an event (routing metrics), a GraphQL query (HTTP metrics)
    const posted = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([issuerNotReady()]),
    });
    expect(posted.status).toBe(202);
    const scrape = async () => (await fetch(`${svc!.url}/metrics`)).text();
    // the emitter runs on the leader and reports its first inventory snapshot once its caches synced
    const text = await waitFor(
      'the emitter heartbeat',
      async () => {
        const t = await scrape();
        const v = /^certmgr_notify_emitter_last_sync_timestamp_seconds (\S+)$/m.exec(t)?.[1];
        return v !== undefined && Number(v) > 0 ? t : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const families = new Set([...text.matchAll(/^# HELP (certmgr_notify_\S+) /gm)].map((m) => m[1]!));
    const referenced = new Set<string>();
    for (const p of dashboard().panels)
      for (const t of p.targets ?? []) for (const n of metricNames(t.expr)) referenced.add(`dashboard: ${n}`);
    // the variables' label_values queries too (a process metric: the agent has it as well)
    for (const v of dashboard().templating.list)
      for (const n of metricNames(JSON.stringify(v.query))) referenced.add(`dashboard variable: ${n}`);
    for (const extra of [[], AGENT])
      for (const r of rulesOf(await template(...ALL_ON, ...extra))) for (const n of metricNames(r.expr)) referenced.add(`rules: ${n}`);
    expect(referenced.size).toBeGreaterThanOrEqual(20);
    const missing = [...referenced].filter((r) => !families.has(r.split(': ')[1]!));
    expect(missing).toEqual([]);
    // docs/observability.md lists every family of the scrape (prom-client's process metrics as a group)
    const doc = readFileSync(join(REPO_ROOT, 'docs', 'observability.md'), 'utf8');
    const undocumented = [...families].filter((f) => !/^certmgr_notify_(process|nodejs)_/.test(f) && !doc.includes(`\`${f}\``));
    expect(undocumented).toEqual([]);
    // and the check can fail: a name that does not exist is not a family
    expect(families.has('certmgr_notify_no_such_metric_total')).toBe(false);
  }, 300_000);
});
