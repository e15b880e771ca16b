/**
 * A real Prometheus Alertmanager (Debian's `prometheus-alertmanager`) on a free loopback port, for tests and
 * benches: a temporary --storage.path, no cluster gossip (--cluster.listen-address empty), the given configuration.
 * `ALERTMANAGER_BIN` names another binary.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reservedPort } from './ports.js';

const ALERTMANAGER_BIN = process.env.ALERTMANAGER_BIN || '/usr/bin/prometheus-alertmanager';

/** Why no Alertmanager can be started here, or null. */
export function alertmanagerMissing(): string | null {
  try {
    accessSync(ALERTMANAGER_BIN, constants.X_OK);
    return null;
  } catch {
    return `no Alertmanager binary at ${ALERTMANAGER_BIN} (Debian package prometheus-alertmanager; ALERTMANAGER_BIN names another)`;
  }
}

export interface AlertmanagerOptions {
  /** alertmanager.yml as text. */
  config: string;
  /** Its --web.config.file as text (TLS, basic_auth_users), if any. */
  webConfig?: string;
  /** Extra flags, e.g. ['--data.retention=1h']. */
  args?: string[];
  /** How long to wait for /-/ready; default 20 s. */
  readyTimeoutMs?: number;
}

export interface RunningAlertmanager {
  /** http://127.0.0.1:<port> */
  url: string;
  /** Its stderr so far (Alertmanager logs there), for a failing test's message. */
  logs(): string;
  stop(): Promise<void>;
}

const MAX_LOG = 64 * 1024;

async function ready(url: string, child: ChildProcess, logs: () => string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    try {
      const res = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      // 401: a webConfig with basic_auth_users guards /-/ready too; the server answers, so it is up
      if (res.ok || res.status === 401) return true;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`Alertmanager at ${url} was not ready within ${timeoutMs} ms; its log:\n${logs()}`);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * Starts Alertmanager with `config` and resolves once it answers /-/ready. A port taken between its choice and
 * the bind (the process exits) is retried on another one.
 */
export async function startAlertmanager(opts: AlertmanagerOptions): Promise<RunningAlertmanager> {
  const missing = alertmanagerMissing();
  if (missing) throw new Error(missing);
  const dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-am-'));
  const configFile = join(dir, 'alertmanager.yml');
  writeFileSync(configFile, opts.config);
  const webConfigFile = join(dir, 'web.yml');
  if (opts.webConfig !== undefined) writeFileSync(webConfigFile, opts.webConfig);
  let lastLog = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const reserved = await reservedPort();
    await reserved.release();
    const url = `http://127.0.0.1:${reserved.port}`;
    let log = '';
    const child = spawn(
      ALERTMANAGER_BIN,
      [
        `--config.file=${configFile}`,
        `--storage.path=${join(dir, `data-${attempt}`)}`,
        `--web.listen-address=127.0.0.1:${reserved.port}`,
        '--cluster.listen-address=',
        '--log.level=info',
        ...(opts.webConfig !== undefined ? [`--web.config.file=${webConfigFile}`] : []),
        ...(opts.args ?? []),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const collect = (c: Buffer) => {
      if (log.length < MAX_LOG) log += c.toString('utf8');
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    child.on('error', collect.bind(null, Buffer.from('spawn error\n')));
    if (await ready(url, child, () => log, opts.readyTimeoutMs ?? 20_000)) {
      return {
        url,
        logs: () => log,
        async stop() {
          await stopChild(child);
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    lastLog = log;
    await stopChild(child);
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`Alertmanager did not start (3 attempts); its last log:\n${lastLog}`);
}
