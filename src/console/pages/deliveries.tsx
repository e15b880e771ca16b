import { useState } from 'preact/hooks';
import type { PageProps } from '../app.js';
import { DataTable, Empty, ErrorNote, Loading, PageHeader, SelectField, Tag } from '../components/common.js';
import { formatTime, resourceLabel } from '../format.js';
import { useAction, useQuery } from '../hooks.js';

interface Delivery {
  id: string;
  status: string;
  attempts: number;
  lastError: string | null;
  lastStatusCode: number | null;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
  routerName: string;
  reminder: boolean;
  integration: { name: string; type: string } | null;
  event: {
    id: string;
    type: string;
    receivedAt: string;
    resource: { kind: string; namespace: string | null; name: string; cluster: string | null };
  } | null;
}

const DELIVERIES = `query Deliveries($filter: DeliveryFilterInput, $after: String) {
  deliveries(filter: $filter, first: 50, after: $after) {
    nodes {
      id status attempts lastError lastStatusCode nextAttemptAt createdAt deliveredAt routerName reminder
      integration { name type }
      event { id type receivedAt resource { kind namespace name cluster } }
    }
    pageInfo { hasNextPage endCursor }
  }
}`;

const RETRY = `mutation RetryDelivery($id: UUID!) { retryDelivery(id: $id) { id status } }`;

const STATUSES = ['PENDING', 'IN_FLIGHT', 'DELIVERED', 'DEAD', 'SUPERSEDED', 'SILENCED'];

export function DeliveriesPage({ api, canWrite }: PageProps) {
  const [status, setStatus] = useState('');
  // cursors of the pages before the current one: Previous pops, Next pushes
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const after = cursors[cursors.length - 1] ?? null;
  const q = useQuery<{ deliveries: { nodes: Delivery[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } }>(api, DELIVERIES, {
    filter: status ? { status } : null,
    after,
  });
  const retry = useAction();
  const [notice, setNotice] = useState('');
  const rows = q.data?.deliveries.nodes ?? [];

  const doRetry = async (id: string) => {
    setNotice('');
    const r = await retry.run(() => api<{ retryDelivery: { id: string; status: string } }>(RETRY, { id }));
    if (r) setNotice(`Delivery ${id.slice(0, 8)} is ${r.retryDelivery.status} again: it is sent at the next attempt.`);
    q.reload();
  };

  return (
    <section>
      <PageHeader title="Deliveries">
        <button type="button" class="secondary" onClick={q.reload}>
          Refresh
        </button>
      </PageHeader>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <SelectField
          label="Status"
          name="status"
          value={status}
          options={[{ value: '', label: 'any' }, ...STATUSES.map((s) => ({ value: s, label: s === 'DEAD' ? 'DEAD (dead letters)' : s }))]}
          onChange={(v) => {
            setStatus(v);
            setCursors([null]);
          }}
        />
      </form>
      <ErrorNote error={q.error} />
      <ErrorNote error={retry.error} />
      {notice && <p role="status">{notice}</p>}
      <Loading loading={q.loading && !q.data} />
      <Empty when={!!q.data && rows.length === 0}>
        {status
          ? `No delivery with status ${status}.`
          : 'No delivery yet: one is made when an event matches an enabled router. Check that a router exists for the event family (Routers page, Try it), then post an event (POST /v1/events) or wait for the agent to report one.'}
      </Empty>
      {rows.length > 0 && (
        <DataTable
          headers={['Status', 'Created', 'Resource and event', 'Router → integration', 'Attempts', 'Last error', canWrite && 'Action']}
        >
          {rows.map((d) => (
            <tr key={d.id} data-delivery={d.id}>
              <td>
                <Tag value={d.status} />
                {d.reminder && <small> reminder</small>}
              </td>
              <td>
                {formatTime(d.createdAt)}
                {d.deliveredAt && (
                  <>
                    <br />
                    <small>delivered {formatTime(d.deliveredAt)}</small>
                  </>
                )}
                {d.nextAttemptAt && (
                  <>
                    <br />
                    <small>next attempt {formatTime(d.nextAttemptAt)}</small>
                  </>
                )}
              </td>
              <td>
                {d.event ? (
                  <>
                    {resourceLabel(d.event.resource) && <strong class="resource">{resourceLabel(d.event.resource)}</strong>}
                    {d.event.resource.cluster && <small class="cluster"> in {d.event.resource.cluster}</small>}
                    <br />
                    <small>{d.event.type}</small>
                  </>
                ) : (
                  <small>—</small>
                )}
              </td>
              <td>
                {d.routerName} → {d.integration ? `${d.integration.name} (${d.integration.type})` : 'deleted integration'}
              </td>
              <td>{d.attempts}</td>
              <td>
                {d.lastError ? <small>{d.lastError}</small> : d.lastStatusCode !== null ? <small>HTTP {d.lastStatusCode}</small> : null}
              </td>
              {canWrite && (
                <td>
                  {d.status === 'DEAD' && (
                    <button type="button" disabled={retry.pending} onClick={() => doRetry(d.id)} aria-label={`Retry delivery ${d.id}`}>
                      Retry
                    </button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </DataTable>
      )}
      <nav aria-label="Delivery pages" class="pager">
        <button type="button" class="secondary outline" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous
        </button>
        <button
          type="button"
          class="secondary outline"
          disabled={!q.data?.deliveries.pageInfo.hasNextPage}
          onClick={() => setCursors([...cursors, q.data?.deliveries.pageInfo.endCursor ?? null])}
        >
          Next
        </button>
      </nav>
    </section>
  );
}
