import type { PageProps } from '../app.js';
import { DataTable, Empty, ErrorNote, Loading, PageHeader, Tag } from '../components/common.js';
import { ago, formatTime } from '../format.js';
import { useQuery } from '../hooks.js';

interface UnhealthyResource {
  kind: string;
  namespace: string | null;
  name: string;
  cluster: string | null;
  type: string;
  since: string;
  reason: string | null;
  message: string | null;
  deliveries: {
    id: string;
    status: string;
    attempts: number;
    routerName: string;
    createdAt: string;
    integration: { name: string } | null;
  }[];
}

const UNHEALTHY = `query Unhealthy {
  unhealthyResources(first: 100) {
    nodes {
      kind namespace name cluster type since reason message
      deliveries { id status attempts routerName createdAt integration { name } }
    }
    pageInfo { hasNextPage }
  }
}`;

export function HealthPage({ api }: PageProps) {
  const q = useQuery<{ unhealthyResources: { nodes: UnhealthyResource[]; pageInfo: { hasNextPage: boolean } } }>(api, UNHEALTHY);
  const now = Date.now();
  const rows = q.data?.unhealthyResources.nodes ?? [];
  return (
    <section>
      <PageHeader title="Health">
        <button type="button" class="secondary" onClick={q.reload}>
          Refresh
        </button>
      </PageHeader>
      <p>Resources whose latest health event says not ready, longest unhealthy first, and the notifications sent for them.</p>
      <ErrorNote error={q.error} />
      <Loading loading={q.loading && !q.data} />
      <Empty when={!!q.data && rows.length === 0}>
        No unhealthy resource. Health events come from an agent or <code>serve --kube on</code> (or POST /v1/events): a resource shows here
        from its .notready event until its .active one.
      </Empty>
      {rows.length > 0 && (
        <DataTable headers={['Resource', 'Cluster', 'Unhealthy since', 'Reason', 'Notifications']}>
          {rows.map((r) => (
            <tr key={`${r.cluster ?? ''}/${r.kind}/${r.namespace ?? ''}/${r.name}`}>
              <td>
                <strong>
                  {r.kind} {r.namespace ? `${r.namespace}/` : ''}
                  {r.name}
                </strong>
                <br />
                <small>{r.type}</small>
              </td>
              <td>{r.cluster ?? '—'}</td>
              <td>
                {formatTime(r.since)}
                <br />
                <small>{ago(r.since, now)}</small>
              </td>
              <td>
                {r.reason ?? '—'}
                {r.message && (
                  <>
                    <br />
                    <small>{r.message}</small>
                  </>
                )}
              </td>
              <td>
                {r.deliveries.length === 0 ? (
                  <small>none</small>
                ) : (
                  <ul class="compact">
                    {r.deliveries.map((d) => (
                      <li key={d.id}>
                        <Tag value={d.status} /> {d.routerName} → {d.integration?.name ?? 'deleted integration'}{' '}
                        <small>{formatTime(d.createdAt)}</small>
                      </li>
                    ))}
                  </ul>
                )}
              </td>
            </tr>
          ))}
        </DataTable>
      )}
      {q.data?.unhealthyResources.pageInfo.hasNextPage && <p>Showing the 100 longest unhealthy.</p>}
    </section>
  );
}
