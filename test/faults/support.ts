/** Shared by the fault suite: a killable `serve` process per engine, and reading every delivery row back. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomSchema } from '../support/postgres.js';
import { testSecretKeyFile } from '../support/service.js';
import { startServiceProcess, type ServiceProcess } from '../e2e/service-process.js';

export type Engine = 'sqlite' | 'postgres';
export const KEY = 'faults-key-0123456789abcdef';

/** A fresh store: a SQLite file (it must outlive the process), or a schema of its own on the test PostgreSQL. */
export function freshStore(kind: Engine): string {
  if (kind === 'sqlite') return `sqlite:${join(mkdtempSync(join(tmpdir(), 'cmn-faults-')), 'store.db')}`;
  const u = new URL(process.env.DATABASE_URL!);
  u.searchParams.set('schema', randomSchema('t_faults'));
  return u.toString();
}

/**
 * Starts `serve` on `store` under a fixed `--instance-id`, so a restart is "the same pod" and takes its own
 * claims back at once. Loopback receivers need `--egress-allow 127.0.0.1/32` (the egress policy).
 */
export function startServe(kind: Engine, store: string, instanceId: string, extra: string[] = []): Promise<ServiceProcess> {
  return startServiceProcess(
    [
      '--store',
      store,
      ...(kind === 'postgres' ? ['--secret-key-file', testSecretKeyFile()] : []),
      '--instance-id',
      instanceId,
      '--egress-allow',
      '127.0.0.1/32',
      ...extra,
    ],
    KEY,
  );
}

export interface DeliveryRow {
  id: string;
  status: string;
  attempts: number;
}

/** Every delivery row (of one integration, or all of them), all pages (500 a page, the API's maximum). */
export async function allDeliveries(svc: ServiceProcess, integrationId?: string, status?: string): Promise<DeliveryRow[]> {
  const out: DeliveryRow[] = [];
  let after: string | null = null;
  for (;;) {
    const q: { deliveries: { nodes: DeliveryRow[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } } = await svc
      .gql()
      .request(
        `query($i: UUID, $s: DeliveryStatus, $a: String) { deliveries(filter: { integrationId: $i, status: $s }, first: 500, after: $a) { nodes { id status attempts } pageInfo { hasNextPage endCursor } } }`,
        { i: integrationId ?? null, s: status ?? null, a: after },
      );
    out.push(...q.deliveries.nodes);
    if (!q.deliveries.pageInfo.hasNextPage) return out;
    after = q.deliveries.pageInfo.endCursor;
  }
}

/** Counts per status. */
export function byStatus(rows: DeliveryRow[]): Record<string, number> {
  const c: Record<string, number> = {};
  for (const r of rows) c[r.status] = (c[r.status] ?? 0) + 1;
  return c;
}
