/**
 * Two clusters, one hub: two real kube-apiservers on loopback, a real PostgreSQL, and only shipped processes
 * (the built bundle): a hub of two `serve` replicas behind one loopback address (the test's stand-in for a
 * Kubernetes Service), and one `agent` per cluster.
 *
 * - The hub replicas share a PostgreSQL schema and --secret-key-file, run the operator for cluster A
 *   (`--kube on --emitter false --cluster-name a`: only the Lease holder reconciles and delivers), evaluate
 *   expiry over the inventory every 2 s, and deliver to a loopback webhook receiver and a loopback incident
 *   receiver (--incident-events-url).
 * - Agent A reports with an `agent`-scope key. Agent B runs `--operator` too (docs/agent.md), which needs an
 *   `admin` key: it is how cluster B's MonitoringConfig reaches the hub.
 *
 * Outcomes: health events of both clusters arrive once each with their own cluster identity, through routers
 * made with the spec's `data.clusterName` patterns; the inventory lists both clusters' certificates; each
 * expiring certificate gives exactly one expiration event per threshold crossed (rules crossed together at the
 * first sight give one, the most urgent: docs/expiry.md, catch-up; a rule tightened past a point already notified
 * gives none); the
 * leader SIGKILLed with deliveries in flight, then the whole hub stopped for a minute and started again: every
 * transition made meanwhile arrives, repeats carry the same ids, the agents recover by themselves; cluster B's
 * MonitoringConfig is ManagedElsewhere and changes nothing; an agent key may not read or change the configuration.
 * Timings are printed, never asserted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { GraphQLClient } from 'graphql-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { DEFAULT_COMPANY_ID } from '../../src/config.js';
import { MANAGER_HEADER } from '../../src/model/manager.js';
import { selfSigned } from '../emitter/fixtures.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { Kube, installCrds, monitoringConfig } from '../operator/support.js';
import { allDeliveries, byStatus, freshStore } from '../faults/support.js';
import { serviceBinary } from '../support/binary.js';
import { applyManifest, ensureKubeBinaries, ensureNamespace, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { testSecretKeyFile } from '../support/service.js';
import { startServiceProcess, type ServiceProcess } from './service-process.js';
import { limitsFile } from '../support/limits.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';

const CLUSTERS = ['a', 'b'] as const;
type Cluster = (typeof CLUSTERS)[number];
const CLUSTER_ID: Record<Cluster, string> = { a: 'aaaaaaaa-0000-4000-8000-00000000000a', b: 'bbbbbbbb-0000-4000-8000-00000000000b' };
const ADMIN_KEY = 'two-clusters-admin-0123456789abcdef';
const AGENT_KEY: Record<Cluster, string> = { a: 'two-clusters-agent-a-0123456789ab', b: 'two-clusters-agent-b-0123456789ab' };
/** Agent B runs the operator too, which needs an admin key (docs/agent.md, --operator). */
const OPERATOR_KEY_B = 'two-clusters-operator-b-0123456789';
const OUTAGE_MS = 60_000; // a minute's outage: the point of the test
const NS = 'pki'; // Issuers
const APPS = 'apps'; // TLS Secrets
const STATE_NS = 'certmgr-notify';
const ISSUER_FAMILY = 'certmgr-issuer-health-notification-config';
const MONITORING_MANAGER_A = 'k8s:MonitoringConfig//default@a';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The hub's one address, as a Kubernetes Service gives it: each TCP connection goes to the next live replica
 * (round robin, the next one when a connect is refused); with none left the connection is closed at once.
 */
interface HubAddress {
  url: string;
  setBackends(urls: string[]): void;
  close(): Promise<void>;
}

async function startHubAddress(): Promise<HubAddress> {
  let backends: { host: string; port: number }[] = [];
  let next = 0;
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    client.pause();
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    const order = backends.map((_, i) => backends[(next + i) % backends.length]!);
    next++;
    const attempt = (): void => {
      const b = order.shift();
      if (!b) return void client.destroy();
      const up = connect(b);
      open.add(up);
      let connected = false;
      up.once('connect', () => {
        connected = true;
        client.pipe(up);
        up.pipe(client);
        client.resume();
      });
      up.on('error', () => {
        up.destroy();
        if (!connected) attempt();
        else client.destroy();
      });
      up.on('close', () => {
        open.delete(up);
        if (connected) client.destroy();
      });
      client.on('close', () => up.destroy());
    };
    attempt();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setBackends(urls) {
      backends = urls.map((u) => ({ host: new URL(u).hostname, port: Number(new URL(u).port) }));
    },
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

interface AgentProcess {
  url: string;
  proc: ChildProcess;
  output(): string;
  kill(): Promise<void>;
}

/** `certmgr-notify agent` of the built bundle, in its own cluster. */
async function startAgentProcess(cluster: Cluster, env: KubeEnv, hubUrl: string, key: string, extra: string[] = []): Promise<AgentProcess> {
  const dir = mkdtempSync(join(tmpdir(), `cmn-agent-${cluster}-`));
  const keyFile = join(dir, 'api-key');
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  const proc = spawn(
    process.execPath,
    [
      serviceBinary(),
      'agent',
      '--hub-url',
      hubUrl,
      '--api-key-file',
      keyFile,
      '--cluster-name',
      cluster,
      '--cluster-id',
      CLUSTER_ID[cluster],
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--state-namespace',
      STATE_NS,
      '--instance-id',
      `agent-${cluster}-0`,
      '--health-grace-period',
      '500ms',
      ...extra,
    ],
    { cwd: dir, env: { ...process.env, KUBECONFIG: env.kubeconfigPath }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const url = await waitFor(
    `agent ${cluster} listening`,
    () => {
      if (proc.exitCode !== null) throw new Error(`agent ${cluster} exited:\n${out}`);
      const line = out.split('\n').find((l) => l.includes('"msg":"listening"'));
      return line ? (JSON.parse(line) as { url: string }).url : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  return {
    url,
    proc,
    output: () => out,
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** A webhook notification as the receiver got it. */
interface Hook {
  path: string;
  id: string;
  type: string;
  eventId: string;
  cluster: { id: string; name: string } | null;
  issuer: string;
  statusTransition: string | null;
  correlationKey: string;
  expiration: { ruleId: number; threshold: number; certificateRef: string } | null;
  message: string | null;
}

/** An incident (Events v2) request as the pager got it. */
interface Page {
  action: string;
  dedupKey: string;
  eventId: string;
  clusterName: string;
  issuer: string;
}

describe.skipIf(skip)('two clusters, one hub', () => {
  const kube = {} as Record<Cluster, KubeEnv>;
  let hooks: Receiver;
  let pager: Receiver;
  let hub: HubAddress;
  let keysFile: string;
  let store: string;
  const replicas: (ServiceProcess | undefined)[] = [undefined, undefined];
  const everyProcess: { kill(): Promise<void> }[] = [];
  const agents = {} as Record<Cluster, AgentProcess>;

  const gql = (key = ADMIN_KEY) => new GraphQLClient(`${hub.url}/graphql`, { headers: { 'svc-api-key': key } });
  const live = () => replicas.filter((r): r is ServiceProcess => r !== undefined);

  /** Replica i of the hub (same --instance-id across restarts: "the same pod"). */
  async function startReplica(i: number): Promise<ServiceProcess> {
    const p = await startServiceProcess(
      [
        '--kube',
        'on',
        '--emitter',
        'false',
        '--cluster-name',
        'a',
        '--store',
        store,
        '--secret-key-file',
        testSecretKeyFile(),
        '--api-keys-file',
        keysFile,
        '--instance-id',
        `hub-${i}`,
        '--lease-namespace',
        'default',
        '--lease-name',
        'two-clusters-hub',

        '--incident-events-url',
        pager.url,
        '--egress-allow',
        '127.0.0.1/32',

        // claims of a SIGKILLed replica are taken over after 3 × this

        ...limitsFile({
          leaseDuration: '4s',
          renewDeadline: '3s',
          retryPeriod: '500ms',
          resyncPeriod: '5s',
          expiryScanInterval: '2s',
          deliveryTimeout: '4s',
          deliveryRetryBase: '100ms',
        }),
      ],
      ADMIN_KEY,
      { KUBECONFIG: kube.a.kubeconfigPath },
    );
    replicas[i] = p;
    everyProcess.push(p);
    hub.setBackends(live().map((r) => r.url));
    return p;
  }

  async function stopReplica(i: number, signal: NodeJS.Signals): Promise<void> {
    const p = replicas[i]!;
    replicas[i] = undefined;
    hub.setBackends(live().map((r) => r.url));
    await p.kill(signal);
  }

  const leads = async (p: ServiceProcess): Promise<boolean> =>
    /^certmgr_notify_operator_leader 1$/m.test(await (await fetch(`${p.url}/metrics`)).text());

  /** Company scans of the expiry scanner since this replica started (every outcome but failed). */
  const scans = async (p: ServiceProcess): Promise<number> => {
    const text = await (await fetch(`${p.url}/metrics`)).text();
    let n = 0;
    for (const m of text.matchAll(/^certmgr_notify_expiry_company_scans_total\{outcome="(scanned|recent|busy|disabled)"\} (\d+)/gm))
      n += Number(m[2]);
    return n;
  };

  let second = Math.ceil(Date.now() / 1000);
  /** Sets an Issuer's Ready condition; each flip a later lastTransitionTime. */
  async function flip(cluster: Cluster, name: string, ready: boolean): Promise<void> {
    const at = new Date(++second * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    const condition = ready
      ? {
          type: 'Ready',
          status: 'True',
          reason: 'ACMEAccountRegistered',
          message: 'registered',
          lastTransitionTime: at,
          observedGeneration: 1,
        }
      : {
          type: 'Ready',
          status: 'False',
          reason: 'ErrRegisterACMEAccount',
          message: 'account registration failed',
          lastTransitionTime: at,
          observedGeneration: 1,
        };
    await kube[cluster]
      .kubeConfig()
      .makeApiClient(CustomObjectsApi)
      .patchNamespacedCustomObjectStatus(
        { group: 'cert-manager.io', version: 'v1', plural: 'issuers', namespace: NS, name, body: { status: { conditions: [condition] } } },
        mergePatch,
      );
  }

  /** A TLS Secret holding a real self-signed X.509 certificate valid for `days`. */
  async function tlsSecret(cluster: Cluster, name: string, days: number): Promise<void> {
    const cert = selfSigned({ cn: `${name}.${cluster}.example.com`, days });
    await kube[cluster]
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespacedSecret({
        namespace: APPS,
        body: {
          metadata: { name },
          type: 'kubernetes.io/tls',
          data: { 'tls.crt': Buffer.from(cert.pem).toString('base64'), 'tls.key': Buffer.from(cert.keyPem).toString('base64') },
        },
      });
  }

  const hookList = (path?: string): Hook[] =>
    hooks.requests
      .filter((r) => path === undefined || r.path === path)
      .map((r) => {
        const b = JSON.parse(r.body) as {
          type: string;
          data: {
            eventId: string;
            cluster: { id: string; name: string } | null;
            resource: { name?: string } | null;
            statusTransition: string | null;
            correlationKey: string;
            expiration: Hook['expiration'];
            message: string | null;
          };
        };
        return {
          path: r.path,
          id: String(r.headers['webhook-id']),
          type: b.type.replace(/^io\.certmgr\.notify\./, ''),
          eventId: b.data.eventId,
          cluster: b.data.cluster,
          issuer: b.data.resource?.name ?? '',
          statusTransition: b.data.statusTransition,
          correlationKey: b.data.correlationKey,
          expiration: b.data.expiration,
          message: b.data.message,
        };
      });
  const health = (cluster: Cluster, issuer: string, state: 'notready' | 'active'): Hook[] =>
    hookList(`/${cluster}`).filter((h) => h.issuer === issuer && h.type === `evt.healthstatus.certmgr-issuer.${state}`);
  const pages = (): Page[] =>
    pager.requests.map((r) => {
      const b = JSON.parse(r.body) as {
        event_action: string;
        dedup_key: string;
        payload: { custom_details: { eventId: string; clusterName: string; issuerName: string } };
      };
      const d = b.payload.custom_details;
      return { action: b.event_action, dedupKey: b.dedup_key, eventId: d.eventId, clusterName: d.clusterName, issuer: d.issuerName };
    });
  /** Expiration notifications of the Secret `apps/<secret>` of `cluster`. */
  const expirations = (cluster: Cluster, secret: string): Hook[] =>
    hookList('/expiry').filter((h) => h.message?.includes(`Secret ${APPS}/${secret}, cluster ${cluster}.`));

  const clusters = async () =>
    (
      await gql().request<{
        clusters: { nodes: { id: string; name: string; lastSeenAt: string; snapshotComplete: boolean; certificateCount: number }[] };
      }>(`{ clusters(first: 500) { nodes { id name lastSeenAt snapshotComplete certificateCount } } }`)
    ).clusters.nodes;
  const certificates = async () =>
    (
      await gql().request<{
        certificates: { nodes: { clusterId: string; clusterName: string; namespace: string; secretName: string; serial: string | null }[] };
      }>(`{ certificates(first: 500) { nodes { clusterId clusterName namespace secretName serial } } }`)
    ).certificates.nodes;
  /** The company's monitoring configuration and its manager, through the hub's REST API. */
  const monitoring = async () => {
    const r = await fetch(`${hub.url}${ops.MONITORING_CONFIG_PATH}`, { headers: { 'svc-api-key': ADMIN_KEY } });
    return {
      manager: r.headers.get(MANAGER_HEADER),
      configuration: ((await r.json()) as { configuration: Record<string, unknown> }).configuration,
    };
  };
  const placesOf = async (cluster: Cluster) =>
    (await certificates())
      .filter((c) => c.clusterId === CLUSTER_ID[cluster])
      .map((c) => `${c.clusterName}:${c.namespace}/${c.secretName}`)
      .sort();

  beforeAll(async () => {
    await ensureKubeBinaries();
    const [a, b] = await Promise.all([startKubeEnv(), startKubeEnv()]);
    kube.a = a;
    kube.b = b;
    hooks = await startReceiver();
    pager = await startReceiver((_r, res) => {
      res.statusCode = 202;
      res.end('{"status":"success"}');
    });
    hub = await startHubAddress();
    for (const c of CLUSTERS) {
      const kc = kube[c].kubeConfig();
      await installCertManagerCrds(kc);
      await installCrds(kc); // our CRDs: the hub's operator (A) and agent B's operator
      for (const ns of [NS, APPS, STATE_NS]) await ensureNamespace(kc, ns);
      for (const name of ['steady', 'killed', 'outage'])
        await applyManifest(kc, {
          apiVersion: 'cert-manager.io/v1',
          kind: 'Issuer',
          metadata: { name, namespace: NS },
          spec: { acme: {} },
        } as never);
      await tlsSecret(c, 'web-tls', 200); // not expiring
    }
    await tlsSecret('a', 'exp-tls', 20); // crosses the 30-day rule (1)
    await tlsSecret('b', 'exp-tls', 10); // crosses 30 and 14 at once: one event, the most urgent rule (2)

    const dir = mkdtempSync(join(tmpdir(), 'cmn-two-clusters-'));
    keysFile = join(dir, 'keys.yaml');
    const entry = (key: string, scope: string) => `  - { key: ${key}, companyId: ${DEFAULT_COMPANY_ID}, scope: ${scope} }`;
    writeFileSync(
      keysFile,
      ['keys:', entry(AGENT_KEY.a, 'agent'), entry(AGENT_KEY.b, 'agent'), entry(OPERATOR_KEY_B, 'admin')].join('\n') + '\n',
      { mode: 0o600 },
    );
    store = freshStore('postgres');
    await startReplica(0);
    await waitFor('hub-0 leads', () => leads(replicas[0]!), { timeoutMs: 30_000 });
    await startReplica(1);

    // the hub's operator (cluster A) manages the company's monitoring configuration
    await applyManifest(kube.a.kubeConfig(), monitoringConfig('default', { thresholds: [30, 14, 7], includeUnassignedCertificates: true }));
    await new Kube(kube.a.kubeConfig()).waitReady('monitoringconfigs', 'default', undefined, 30_000);

    // what a user sets up through the API: one webhook per cluster, one for expirations, one incident service
    const webhook = async (name: string, path: string) =>
      (
        await gql().request<{ createWebhookIntegration: { id: string } }>(
          `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
          { i: { name, url: `${hooks.url}${path}` } },
        )
      ).createWebhookIntegration.id;
    const route = (name: string, eventTypeId: string, filter: string, integrationId: string) =>
      gql().request(ops.CreateNotificationRouter, {
        details: { name, eventTypeId },
        filterConfig: { advancedFilterExpression: filter },
        integrationConfig: { integrationId },
      });
    for (const c of CLUSTERS) {
      const id = await webhook(`cluster ${c}`, `/${c}`);
      // the spec's patterns "unhealthy / restored … in a cluster"
      await route(`unhealthy in ${c}`, ISSUER_FAMILY, `type.endsWith('.notready') && data.clusterName == '${c}'`, id);
      await route(`restored in ${c}`, ISSUER_FAMILY, `type.endsWith('.active') && data.clusterName == '${c}'`, id);
    }
    await route('all expirations', 'cert-expiry-ext-notification-config', '', await webhook('expirations', '/expiry'));
    const incident = await gql().request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
      name: 'pager',
      integrationKey: 'R0UTINGKEY-two-clusters-0123456789',
    });
    await route('issuers to the pager', ISSUER_FAMILY, '', incident.createIncidentMgmtIntegration.id);

    [agents.a, agents.b] = await Promise.all([
      startAgentProcess('a', kube.a, hub.url, AGENT_KEY.a),
      startAgentProcess('b', kube.b, hub.url, OPERATOR_KEY_B, ['--operator']),
    ]);
    everyProcess.push(agents.a, agents.b);
  }, 10 * 60_000);

  afterAll(async () => {
    for (const p of everyProcess) await p.kill();
    await hub?.close();
    await hooks?.close();
    await pager?.close();
    await Promise.all(CLUSTERS.map((c) => kube[c]?.stop()));
  });

  it('health events of both clusters arrive once each with their own cluster; the inventory lists both; one expiration event per certificate', async () => {
    for (const c of CLUSTERS)
      await waitFor(`agent ${c} ready`, async () => (await fetch(`${agents[c].url}/readyz`)).status === 200, { timeoutMs: 60_000 });

    for (const c of CLUSTERS) await flip(c, 'steady', false);
    for (const c of CLUSTERS) await waitFor(`${c}: steady .notready`, () => health(c, 'steady', 'notready').length > 0);
    for (const c of CLUSTERS) await flip(c, 'steady', true);
    for (const c of CLUSTERS) await waitFor(`${c}: steady .active`, () => health(c, 'steady', 'active').length > 0);

    for (const c of CLUSTERS) {
      const got = hookList(`/${c}`);
      // once each: one delivery (webhook-id) per event; a repeat of a delivery (at-least-once) keeps its id
      const once = [...new Map(got.map((h) => [h.id, h])).values()];
      expect(once.map((h) => `${h.issuer} ${h.type}`)).toEqual([
        'steady evt.healthstatus.certmgr-issuer.notready',
        'steady evt.healthstatus.certmgr-issuer.active',
      ]);
      // each event with its own cluster's identity, and only at its cluster's router
      for (const h of got) expect(h.cluster).toEqual({ id: CLUSTER_ID[c], name: c });
      expect(new Set(got.map((h) => h.eventId)).size).toBe(2);
    }
    await waitFor('the pager got both clusters’ trigger and resolve', () => pages().length >= 4);
    const byKey = new Map<string, string[]>();
    for (const p of new Map(pages().map((x) => [x.eventId, x])).values())
      byKey.set(p.dedupKey, [...(byKey.get(p.dedupKey) ?? []), `${p.clusterName}/${p.issuer} ${p.action}`]);
    expect(Object.fromEntries(byKey)).toEqual({
      [`certmgr:issuer:${CLUSTER_ID.a}:${NS}:steady`]: ['a/steady trigger', 'a/steady resolve'],
      [`certmgr:issuer:${CLUSTER_ID.b}:${NS}:steady`]: ['b/steady trigger', 'b/steady resolve'],
    });

    // the inventory: both clusters, every TLS Secret of each
    await waitFor('both clusters listed', async () => (await clusters()).filter((c) => c.snapshotComplete).length === 2);
    expect(
      (await clusters())
        .map((c) => ({ id: c.id, name: c.name, certificateCount: c.certificateCount }))
        .sort((x, y) => x.name.localeCompare(y.name)),
    ).toEqual([
      { id: CLUSTER_ID.a, name: 'a', certificateCount: 2 },
      { id: CLUSTER_ID.b, name: 'b', certificateCount: 2 },
    ]);
    for (const c of CLUSTERS) expect(await placesOf(c)).toEqual([`${c}:${APPS}/exp-tls`, `${c}:${APPS}/web-tls`]);
    expect((await certificates()).every((c) => c.serial && /^[0-9A-F]+$/.test(c.serial))).toBe(true);

    // expiry on the hub: one event per expiring certificate, for the most urgent rule it crossed
    await waitFor(
      'an expiration event per cluster',
      () => expirations('a', 'exp-tls').length > 0 && expirations('b', 'exp-tls').length > 0,
      {
        timeoutMs: 30_000,
      },
    );
    expect(expirations('a', 'exp-tls').map((h) => h.expiration)).toEqual([expect.objectContaining({ ruleId: 1, threshold: 30 })]);
    expect(expirations('b', 'exp-tls').map((h) => h.expiration)).toEqual([expect.objectContaining({ ruleId: 2, threshold: 14 })]);
    for (const c of CLUSTERS) expect(expirations(c, 'web-tls')).toEqual([]);
  });

  it('an agent key can neither list integrations nor create routers (403)', async () => {
    const before = (
      await gql().request<{ searchNotificationRoutingConfigurations: { nodes: unknown[] } }>(ops.SearchNotificationRoutingConfigurations)
    ).searchNotificationRoutingConfigurations.nodes.length;
    for (const key of Object.values(AGENT_KEY)) {
      const post = (query: string, variables: Record<string, unknown> = {}) =>
        fetch(`${hub.url}/graphql`, {
          method: 'POST',
          headers: { 'svc-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ query, variables }),
        });
      const list = await post(ops.GetIntegrationsListData);
      expect(list.status).toBe(403);
      expect(await list.json()).toMatchObject({ errors: [{ extensions: { code: 'FORBIDDEN' } }] });
      const create = await post(ops.CreateNotificationRouter, {
        details: { name: 'sneaky', eventTypeId: ISSUER_FAMILY },
        filterConfig: { advancedFilterExpression: '' },
        integrationConfig: { integrationId: '00000000-0000-4000-8000-000000000000' },
      });
      expect(create.status).toBe(403);
      const body = (await create.json()) as { errors: { message: string; extensions: { code: string } }[] };
      expect(body.errors[0]!.extensions.code).toBe('FORBIDDEN');
      expect(body.errors[0]!.message).not.toContain(key);
    }
    const after = (
      await gql().request<{ searchNotificationRoutingConfigurations: { nodes: unknown[] } }>(ops.SearchNotificationRoutingConfigurations)
    ).searchNotificationRoutingConfigurations.nodes.length;
    expect(after).toBe(before);
  });

  it("cluster B's MonitoringConfig is refused with ManagedElsewhere and changes nothing", async () => {
    const before = await monitoring();
    expect(before.manager).toBe(MONITORING_MANAGER_A);
    const kb = new Kube(kube.b.kubeConfig());
    await kb.apply(monitoringConfig('default', { thresholds: [9], includeUnassignedCertificates: false }));
    const stalled = await kb.waitCondition(
      'monitoringconfigs',
      'default',
      undefined,
      { status: 'True', type: 'Stalled', reason: 'ManagedElsewhere' },
      30_000,
    );
    const message = stalled.status?.conditions?.find((c) => c.type === 'Stalled')?.message ?? '';
    expect(message).toContain(MONITORING_MANAGER_A);
    expect(await monitoring()).toEqual(before);
  });

  it(
    'leader SIGKILLed with deliveries in flight, then the hub down for a minute: nothing lost, repeats with the same ids, agents recover',
    async () => {
      // 1. SIGKILL the replica that leads (and delivers) while it holds the `killed` notifications in flight
      const held: { path: string; answer: () => void }[] = [];
      let holding = true;
      hooks.handle((r, res) => {
        if (holding && (r.path === '/a' || r.path === '/b') && r.body.includes('"name":"killed"'))
          held.push({ path: r.path, answer: () => res.end('ok') });
        else res.end('ok');
      });
      for (const c of CLUSTERS) await flip(c, 'killed', false);
      await waitFor('both `killed` notifications in flight', () => CLUSTERS.every((c) => held.some((h) => h.path === `/${c}`)), {
        timeoutMs: 30_000,
      });
      const leader = (await leads(replicas[0]!)) ? 0 : 1;
      const follower = 1 - leader;
      const killedAt = Date.now();
      await stopReplica(leader, 'SIGKILL');
      holding = false;
      for (const h of held) h.answer(); // to a dead connection: never recorded as delivered
      await waitFor('the other replica leads', () => leads(replicas[follower]!), { timeoutMs: 30_000 });
      const takeoverMs = Date.now() - killedAt;
      for (const c of CLUSTERS)
        await waitFor(`${c}: \`killed\` .notready sent again by the new leader`, () => health(c, 'killed', 'notready').length >= 2, {
          timeoutMs: 60_000,
        });
      await waitFor(
        'the pager got both `killed` triggers',
        () => CLUSTERS.every((c) => pages().some((p) => p.clusterName === c && p.issuer === 'killed')),
        {
          timeoutMs: 60_000,
        },
      );

      // 2. the whole hub down for a minute; the clusters change meanwhile
      const seenBefore = new Map((await clusters()).map((c) => [c.id, Date.parse(c.lastSeenAt)]));
      await stopReplica(follower, 'SIGTERM');
      const downAt = Date.now();
      expect(live()).toEqual([]);
      expect((await fetch(`${hub.url}/readyz`).catch(() => undefined))?.status).toBeUndefined();
      for (const c of CLUSTERS) {
        await flip(c, 'killed', true);
        await flip(c, 'outage', false);
      }
      await tlsSecret('a', 'late-tls', 5); // reported while the hub is down: rule 3 (7 days) once it is back
      await tlsSecret('b', 'late-tls', 5);
      // rule 2 tightened from 14 to 21 days in cluster A: A's exp-tls (20 days left) was notified at 20 days (rule 1),
      // already within 21, and B's (10 days left, notified at 14) too: neither is notified again (docs/expiry.md,
      // "Threshold changes")
      await new Kube(kube.a.kubeConfig()).replaceSpec('monitoringconfigs', 'default', undefined, {
        thresholds: [30, 21, 7],
        includeUnassignedCertificates: true,
      });
      // the agents stay up and ready: a hub outage is not their fault (docs/agent.md)
      for (const c of CLUSTERS) expect((await fetch(`${agents[c].url}/readyz`)).status).toBe(200);
      await sleep(OUTAGE_MS - (Date.now() - downAt));
      for (const c of CLUSTERS) expect(agents[c].proc.exitCode).toBe(null);

      // 3. started again (same instance ids); the agents find it by themselves
      await Promise.all([startReplica(0), startReplica(1)]);
      const backAt = Date.now();
      const restarted = live();
      for (const c of CLUSTERS) {
        await waitFor(`${c}: \`killed\` .active made during the outage`, () => health(c, 'killed', 'active').length > 0, {
          timeoutMs: 90_000,
        });
        await waitFor(`${c}: \`outage\` .notready made during the outage`, () => health(c, 'outage', 'notready').length > 0, {
          timeoutMs: 90_000,
        });
      }
      const paged = (c: Cluster, issuer: string, action: string) =>
        pages().some((p) => p.clusterName === c && p.issuer === issuer && p.action === action);
      await waitFor(
        'the pager got the resolves and triggers made during the outage',
        () => CLUSTERS.every((c) => paged(c, 'killed', 'resolve') && paged(c, 'outage', 'trigger')),
        {
          timeoutMs: 60_000,
        },
      );
      await waitFor(
        'the inventory re-synced: both clusters seen again, with the Secrets added during the outage',
        async () =>
          (await clusters()).every((c) => Date.parse(c.lastSeenAt) > seenBefore.get(c.id)!) &&
          (await placesOf('a')).includes(`a:${APPS}/late-tls`) &&
          (await placesOf('b')).includes(`b:${APPS}/late-tls`),
        { timeoutMs: 90_000, intervalMs: 500 },
      );
      const recoveredMs = Date.now() - backAt;
      for (const c of CLUSTERS)
        expect(await placesOf(c)).toEqual([`${c}:${APPS}/exp-tls`, `${c}:${APPS}/late-tls`, `${c}:${APPS}/web-tls`]);
      await waitFor(
        'late-tls expiration events',
        () => expirations('a', 'late-tls').length > 0 && expirations('b', 'late-tls').length > 0,
        {
          timeoutMs: 30_000,
        },
      );
      // several expiry rounds after the restart on both replicas: nothing is notified a second time
      const scansAtStart = await Promise.all(restarted.map(scans));
      await waitFor(
        'two more expiry rounds on each replica',
        async () => (await Promise.all(restarted.map(scans))).every((n, i) => n >= scansAtStart[i]! + 2),
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      for (const c of CLUSTERS) {
        expect((await fetch(`${agents[c].url}/readyz`)).status).toBe(200);
        expect(agents[c].proc.exitCode).toBe(null);
      }

      // nothing lost: every delivery of the shared store settled
      const rows = await waitFor(
        'every delivery settled',
        async () => {
          const all = await allDeliveries(restarted[0]!);
          return all.every((d) => d.status === 'DELIVERED' || d.status === 'SUPERSEDED') ? all : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      expect(rows.filter((d) => d.status !== 'DELIVERED')).toEqual([]);
      const receivedIds = new Set(hookList().map((h) => h.id));
      const pagedIds = pager.requests.length;
      expect(rows.length).toBeGreaterThan(0);

      // every transition exactly once per cluster webhook (a repeat is the same delivery: same webhook-id, event id)
      for (const c of CLUSTERS) {
        const got = hookList(`/${c}`);
        const transitions = new Map<string, Hook[]>();
        for (const h of got) transitions.set(`${h.issuer} ${h.type}`, [...(transitions.get(`${h.issuer} ${h.type}`) ?? []), h]);
        expect([...transitions.keys()].sort()).toEqual([
          'killed evt.healthstatus.certmgr-issuer.active',
          'killed evt.healthstatus.certmgr-issuer.notready',
          'outage evt.healthstatus.certmgr-issuer.notready',
          'steady evt.healthstatus.certmgr-issuer.active',
          'steady evt.healthstatus.certmgr-issuer.notready',
        ]);
        for (const [t, hs] of transitions) {
          expect(new Set(hs.map((h) => h.id)).size, `${c}: ${t}`).toBe(1);
          expect(new Set(hs.map((h) => h.eventId)).size, `${c}: ${t}`).toBe(1);
          for (const h of hs) expect(h.cluster).toEqual({ id: CLUSTER_ID[c], name: c });
        }
        expect(health(c, 'killed', 'notready').length).toBeGreaterThanOrEqual(2); // the in-flight one, sent again
      }
      // the pager: per dedup_key the states in order; a repeat only as the same event (same dedup_key, event id)
      for (const c of CLUSTERS) {
        const expected: Record<string, string[]> = { steady: ['trigger', 'resolve'], killed: ['trigger', 'resolve'], outage: ['trigger'] };
        for (const [issuer, actions] of Object.entries(expected)) {
          const mine = pages().filter((p) => p.clusterName === c && p.issuer === issuer);
          expect(new Set(mine.map((p) => p.dedupKey)), `${c}/${issuer}`).toEqual(
            new Set([`certmgr:issuer:${CLUSTER_ID[c]}:${NS}:${issuer}`]),
          );
          const collapsed = mine.map((p) => p.action).filter((a, i, all) => i === 0 || a !== all[i - 1]);
          expect(collapsed, `${c}/${issuer}`).toEqual(actions);
          const perAction = new Map<string, Set<string>>();
          for (const p of mine) perAction.set(p.action, (perAction.get(p.action) ?? new Set()).add(p.eventId));
          for (const [action, ids] of perAction) expect(ids.size, `${c}/${issuer} ${action}`).toBe(1);
        }
      }
      // expiry: exactly one event per certificate and threshold crossed (across the kill, the outage, a threshold
      // change and several rounds on two replicas); a repeat is the same delivery
      const rulesOf = (c: Cluster, secret: string) => {
        const out: Record<number, { threshold: number; events: number; deliveries: number }> = {};
        for (const h of expirations(c, secret)) {
          const same = expirations(c, secret).filter((x) => x.expiration?.ruleId === h.expiration?.ruleId);
          out[h.expiration!.ruleId] = {
            threshold: h.expiration!.threshold,
            events: new Set(same.map((x) => x.eventId)).size,
            deliveries: new Set(same.map((x) => x.id)).size,
          };
        }
        return out;
      };
      const once = (threshold: number) => ({ threshold, events: 1, deliveries: 1 });
      expect(rulesOf('a', 'exp-tls')).toEqual({ 1: once(30) });
      expect(rulesOf('b', 'exp-tls')).toEqual({ 2: once(14) });
      expect(rulesOf('a', 'late-tls')).toEqual({ 3: once(7) });
      expect(rulesOf('b', 'late-tls')).toEqual({ 3: once(7) });
      const known = new Set(
        CLUSTERS.flatMap((c) => ['exp-tls', 'late-tls'].flatMap((secret) => expirations(c, secret).map((h) => h.eventId))),
      );
      expect(hookList('/expiry').filter((h) => !known.has(h.eventId))).toEqual([]);
      for (const c of CLUSTERS) expect(expirations(c, 'web-tls')).toEqual([]);
      // the monitoring configuration is cluster A's, changed by A during the outage; B's CR never wrote it
      const finalConfig = await monitoring();
      expect(finalConfig.manager).toBe(MONITORING_MANAGER_A);
      expect(finalConfig.configuration['thresholds']).toEqual([30, 21, 7]);
      await new Kube(kube.b.kubeConfig()).waitCondition(
        'monitoringconfigs',
        'default',
        undefined,
        { status: 'True', type: 'Stalled', reason: 'ManagedElsewhere' },
        5_000,
      );

      console.log(
        `two-clusters: deliveries ${JSON.stringify(byStatus(rows))}; webhook requests ${hookList().length} (${hookList().length - receivedIds.size} repeats); ` +
          `pager requests ${pagedIds}; hub down ${OUTAGE_MS} ms; leader SIGKILL → other replica leads ${takeoverMs} ms; ` +
          `hub started again → every outage transition delivered and both inventories re-synced ${recoveredMs} ms`,
      );
    },
    5 * 60_000,
  );
});
