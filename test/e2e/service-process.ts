/** Runs `certmgr-notify serve` as a real child process (so it can be SIGKILLed) and talks to it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { GraphQLClient } from 'graphql-request';
import { serviceBinary } from '../support/binary.js';

export interface ServiceProcess {
  url: string;
  proc: ChildProcess;
  output(): string;
  gql(): GraphQLClient;
  postEvents(events: unknown[]): Promise<{ id: string; deliveries: number }[]>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function startServiceProcess(args: string[], key: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const proc = spawn(
    process.execPath,
    [serviceBinary(), 'serve', '--port', '0', '--host', '127.0.0.1', '--kube', 'off', '--api-key', key, ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    },
  );
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`service did not start:\n${out}`)), 30_000);
    const check = () => {
      const line = out.split('\n').find((l) => l.includes('"msg":"listening"'));
      if (line) {
        clearTimeout(t);
        // once: re-splitting the whole output on every later chunk would cost O(n²) over a long run
        proc.stdout!.off('data', check);
        resolve(JSON.parse(line).url as string);
      }
    };
    proc.stdout!.on('data', check);
    proc.once('exit', () => reject(new Error(`service exited:\n${out}`)));
  });
  return {
    url,
    proc,
    output: () => out,
    gql: () => new GraphQLClient(`${url}/graphql`, { headers: { 'svc-api-key': key } }),
    async postEvents(events) {
      const res = await fetch(`${url}/v1/events`, {
        method: 'POST',
        headers: { 'svc-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify(events),
      });
      if (res.status !== 202) throw new Error(`POST /v1/events: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { events: { id: string; deliveries: number }[] }).events;
    },
    async kill(signal = 'SIGKILL') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
  };
}

export async function waitFor<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 30_000, everyMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
