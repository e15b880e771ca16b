import { useState } from 'preact/hooks';
import type { PageProps } from '../app.js';
import { DataTable, Empty, ErrorNote, Loading, PageHeader, SelectField, Tag } from '../components/common.js';
import { ExpiryTimeline } from '../components/timeline.js';
import { formatTime } from '../format.js';
import { useQuery } from '../hooks.js';
import {
  endpointLine,
  isProblem,
  SERVED_FILTERS,
  servedFilter,
  servedHeadline,
  servedNote,
  statusWord,
  type ServedEndpoint,
  type ServingStatusName,
} from '../serving.js';

interface Certificate {
  clusterId: string;
  clusterName: string | null;
  namespace: string;
  secretName: string;
  certificateName: string | null;
  commonName: string | null;
  dnsNames: string[];
  issuer: string | null;
  notBefore: string | null;
  notAfter: string | null;
  daysUntilExpiry: number | null;
  health: string;
  readyReason: string | null;
  applicationIds: string[];
  servingStatus: ServingStatusName | null;
  servingEndpointCount: number;
}

const CERTIFICATES = `query Certificates($filter: CertificateFilter, $after: String) {
  certificates(filter: $filter, first: 500, after: $after) {
    nodes { clusterId clusterName namespace secretName certificateName commonName dnsNames issuer notBefore notAfter daysUntilExpiry health readyReason applicationIds servingStatus servingEndpointCount }
    pageInfo { hasNextPage endCursor }
  }
  clusters { nodes { id name } }
}`;

/**
 * The endpoints of the rows that matter (those with a serving problem, or those of the Served filter), in a query of
 * their own: a list of endpoints on each of 500 rows would take the query past the API's cost budget.
 */
const SERVING = `query CertificateServing($filter: CertificateFilter) {
  certificates(filter: $filter, first: 100) {
    nodes { clusterId namespace secretName serving(first: 8) { host address status reason servedSerial servedNotAfter checkedAt } }
  }
}`;

const keyOf = (c: { clusterId: string; namespace: string; secretName: string }) => `${c.clusterId}/${c.namespace}/${c.secretName}`;

interface Filters {
  search: string;
  clusterId: string;
  namespace: string;
  applicationId: string;
  health: string;
  within: string;
  served: string;
}

/** The server filter (CertificateFilter): empty fields left out. */
function serverFilter(f: Filters): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (f.clusterId) out.clusterId = f.clusterId;
  if (f.namespace.trim()) out.namespace = f.namespace.trim();
  if (f.applicationId.trim()) out.applicationId = f.applicationId.trim();
  if (f.health) out.health = f.health;
  const n = Number(f.within);
  if (f.within.trim() !== '' && Number.isInteger(n) && n >= 0 && n <= 3650) out.expiringWithinDays = n;
  return { ...out, ...servedFilter(f.served) };
}

/** The Served cell: the worst verdict, and the endpoints' lines when they were loaded (on hover and unfolded). */
function Served({ c, endpoints, now }: { c: Certificate; endpoints: ServedEndpoint[] | undefined; now: number }) {
  if (c.servingStatus === null) return <small title="no endpoint reported for this Secret">—</small>;
  const note = servedNote(c, now);
  const lines = (endpoints ?? []).map((e) => endpointLine(e, now));
  const more = c.servingEndpointCount - lines.length;
  const count = `${c.servingEndpointCount} endpoint${c.servingEndpointCount === 1 ? '' : 's'}`;
  // read out as one phrase: "stale — renewed 12m ago, 2 endpoints"
  const label = `${servedHeadline(c, now)}, ${count}`;
  const head = (
    <>
      <Tag value={statusWord(c.servingStatus)} />
      {note && <small class="served-note"> — {note}</small>}
      <br />
      <small>{count}</small>
    </>
  );
  if (lines.length === 0)
    return (
      <span class="served" aria-label={label}>
        {head}
      </span>
    );
  return (
    <details class="served" title={lines.join('\n')} open={isProblem(c.servingStatus)}>
      <summary aria-label={label}>{head}</summary>
      <ul>
        {lines.map((l) => (
          <li key={l}>
            <small>{l}</small>
          </li>
        ))}
        {more > 0 && (
          <li>
            <small>and {more} more (the API and the CSV list them all)</small>
          </li>
        )}
      </ul>
    </details>
  );
}

/** The search box: matched against names, common name and DNS names (the API has no free-text filter). */
function matches(c: Certificate, search: string): boolean {
  const q = search.trim().toLowerCase();
  if (!q) return true;
  return [c.secretName, c.certificateName, c.commonName, c.namespace, c.clusterName, c.issuer, ...c.dnsNames, ...c.applicationIds].some(
    (s) => s?.toLowerCase().includes(q),
  );
}

const byDaysLeft = (a: Certificate, b: Certificate) => (a.daysUntilExpiry ?? Infinity) - (b.daysUntilExpiry ?? Infinity);

export function CertificatesPage({ api }: PageProps) {
  const [form, setForm] = useState<Filters>({
    search: '',
    clusterId: '',
    namespace: '',
    applicationId: '',
    health: '',
    within: '',
    served: '',
  });
  const [applied, setApplied] = useState(serverFilter(form));
  const q = useQuery<{
    certificates: { nodes: Certificate[]; pageInfo: { hasNextPage: boolean } };
    clusters: { nodes: { id: string; name: string }[] };
  }>(api, CERTIFICATES, { filter: applied });
  const servedFilterGiven = applied.servingStatus !== undefined || applied.servingProblem !== undefined;
  const s = useQuery<{
    certificates: { nodes: { clusterId: string; namespace: string; secretName: string; serving: ServedEndpoint[] }[] };
  }>(api, SERVING, { filter: servedFilterGiven ? applied : { ...applied, servingProblem: true } });
  const endpoints = new Map((s.data?.certificates.nodes ?? []).map((n) => [keyOf(n), n.serving]));
  const now = Date.now();
  const put = (k: keyof Filters) => (value: string) => setForm({ ...form, [k]: value });
  const set = (k: keyof Filters) => (e: Event) => put(k)((e.currentTarget as HTMLInputElement).value);
  const rows = (q.data?.certificates.nodes ?? []).filter((c) => matches(c, form.search)).sort(byDaysLeft);

  return (
    <section>
      <PageHeader title="Certificates" />
      <form
        class="filters"
        aria-label="Filter certificates"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied(serverFilter(form));
        }}
      >
        <div class="grid">
          <label>
            Search
            <input type="search" name="search" value={form.search} onInput={set('search')} placeholder="name, DNS name, issuer…" />
          </label>
          <SelectField
            label="Cluster"
            name="cluster"
            value={form.clusterId}
            options={[{ value: '', label: 'all' }, ...(q.data?.clusters.nodes ?? []).map((c) => ({ value: c.id, label: c.name }))]}
            onChange={put('clusterId')}
          />
          <label>
            Namespace
            <input name="namespace" value={form.namespace} onInput={set('namespace')} />
          </label>
        </div>
        <div class="grid">
          <label>
            Application
            <input name="application" value={form.applicationId} onInput={set('applicationId')} />
          </label>
          <SelectField
            label="Health"
            name="health"
            value={form.health}
            options={[
              { value: '', label: 'any' },
              { value: 'READY', label: 'ready' },
              { value: 'NOT_READY', label: 'not ready' },
              { value: 'UNKNOWN', label: 'unknown' },
            ]}
            onChange={put('health')}
          />
          <label>
            Expiring within (days)
            <input name="within" type="number" min={0} max={3650} value={form.within} onInput={set('within')} />
          </label>
          <SelectField
            label="Served"
            name="served"
            value={form.served}
            options={[{ value: '', label: 'any' }, ...SERVED_FILTERS.map(([value, label]) => ({ value, label }))]}
            onChange={put('served')}
          />
        </div>
        <button type="submit">Apply filters</button>
      </form>
      <ErrorNote error={q.error} />
      <Loading loading={q.loading && !q.data} />
      {q.data && (
        <>
          <ExpiryTimeline days={rows.map((c) => c.daysUntilExpiry)} />
          <p>
            {rows.length} certificate{rows.length === 1 ? '' : 's'}
            {q.data.certificates.pageInfo.hasNextPage ? ' (the first 500: narrow the filter to see the rest)' : ''}
          </p>
          <Empty when={rows.length === 0 && q.data.clusters.nodes.length === 0}>
            No certificate yet: an agent or <code>serve --kube on</code> reports certificates.
          </Empty>
          <Empty when={rows.length === 0 && q.data.clusters.nodes.length > 0}>No certificate matches.</Empty>
          {rows.length > 0 && (
            <DataTable headers={['Days left', 'Certificate', 'Cluster / namespace', 'Health', 'Served', 'Issuer', 'Not after']}>
              {rows.map((c) => (
                <tr key={keyOf(c)} data-certificate={c.secretName}>
                  <td class={c.daysUntilExpiry !== null && c.daysUntilExpiry < 14 ? 'urgent' : undefined}>{c.daysUntilExpiry ?? '—'}</td>
                  <td>
                    <strong>{c.commonName ?? c.secretName}</strong>
                    <br />
                    <small>
                      Secret {c.secretName}
                      {c.certificateName ? `, Certificate ${c.certificateName}` : ''}
                      {c.applicationIds.length ? `, apps ${c.applicationIds.join(', ')}` : ''}
                    </small>
                  </td>
                  <td>
                    {c.clusterName ?? c.clusterId}
                    <br />
                    <small>{c.namespace}</small>
                  </td>
                  <td>
                    <Tag value={c.health} />
                    {c.readyReason && <small> {c.readyReason}</small>}
                  </td>
                  <td class={isProblem(c.servingStatus) ? 'urgent served-cell' : 'served-cell'}>
                    <Served c={c} endpoints={endpoints.get(keyOf(c))} now={now} />
                  </td>
                  <td>
                    <small>{c.issuer ?? '—'}</small>
                  </td>
                  <td>{formatTime(c.notAfter)}</td>
                </tr>
              ))}
            </DataTable>
          )}
        </>
      )}
    </section>
  );
}
