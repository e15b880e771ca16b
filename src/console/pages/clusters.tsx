import type { PageProps } from '../app.js';
import { DataTable, Empty, ErrorNote, Loading, PageHeader, Tag } from '../components/common.js';
import { ago, formatTime } from '../format.js';
import { useQuery } from '../hooks.js';

interface Cluster {
  id: string;
  name: string;
  agentVersion: string;
  firstSeenAt: string;
  lastSeenAt: string;
  silent: boolean;
  snapshotComplete: boolean;
  certificateCount: number;
}

const CLUSTERS = `query Clusters { clusters(first: 500) { nodes { id name agentVersion firstSeenAt lastSeenAt silent snapshotComplete certificateCount } } }`;

export function ClustersPage({ api }: PageProps) {
  const q = useQuery<{ clusters: { nodes: Cluster[] } }>(api, CLUSTERS);
  const now = Date.now();
  const rows = q.data?.clusters.nodes ?? [];
  return (
    <section>
      <PageHeader title="Clusters">
        <button type="button" class="secondary" onClick={q.reload}>
          Refresh
        </button>
      </PageHeader>
      <p>Clusters whose agents report the certificate inventory.</p>
      <ErrorNote error={q.error} />
      <Loading loading={q.loading && !q.data} />
      <Empty when={!!q.data && rows.length === 0}>
        No inventory yet: an agent (the Helm chart with mode=agent, docs/agent.md) or <code>serve --kube on</code> reports certificates.
      </Empty>
      {rows.length > 0 && (
        <DataTable headers={['Cluster', 'Agent', 'Last seen', 'State', 'Certificates']}>
          {rows.map((c) => (
            <tr key={c.id}>
              <td>
                <strong>{c.name}</strong>
                <br />
                <small>{c.id}</small>
              </td>
              <td>{c.agentVersion}</td>
              <td>
                {formatTime(c.lastSeenAt)}
                <br />
                <small>{ago(c.lastSeenAt, now)}</small>
              </td>
              <td>
                <Tag value={c.silent ? 'SILENT' : 'REPORTING'} /> {!c.snapshotComplete && <small>first sync arriving</small>}
              </td>
              <td>{c.certificateCount}</td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}
