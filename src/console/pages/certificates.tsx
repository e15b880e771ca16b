import { useState } from 'preact/hooks';
import type { PageProps } from '../app.js';
import { DataTable, Empty, ErrorNote, Loading, PageHeader, Tag } from '../components/common.js';
import { ExpiryTimeline } from '../components/timeline.js';
import { formatTime } from '../format.js';
import { useQuery } from '../hooks.js';

interface Certificate {
  clusterId: string;
  clusterName: string | null;
  namespace: string;
  secretName: string;
  certificateName: string | null;
  commonName: string | null;
  dnsNames: string[];
  issuer: string | null;
  notAfter: string | null;
  daysUntilExpiry: number | null;
  health: string;
  readyReason: string | null;
  applicationIds: string[];
}

const CERTIFICATES = `query Certificates($filter: CertificateFilter, $after: String) {
  certificates(filter: $filter, first: 500, after: $after) {
    nodes { clusterId clusterName namespace secretName certificateName commonName dnsNames issuer notAfter daysUntilExpiry health readyReason applicationIds }
    pageInfo { hasNextPage endCursor }
  }
  clusters { nodes { id name } }
}`;

interface Filters {
  search: string;
  clusterId: string;
  namespace: string;
  applicationId: string;
  health: string;
  within: string;
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
  return out;
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
  const [form, setForm] = useState<Filters>({ search: '', clusterId: '', namespace: '', applicationId: '', health: '', within: '' });
  const [applied, setApplied] = useState(serverFilter(form));
  const q = useQuery<{
    certificates: { nodes: Certificate[]; pageInfo: { hasNextPage: boolean } };
    clusters: { nodes: { id: string; name: string }[] };
  }>(api, CERTIFICATES, { filter: applied });
  const set = (k: keyof Filters) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
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
          <label>
            Cluster
            <select name="cluster" value={form.clusterId} onChange={set('clusterId')}>
              <option value="">all</option>
              {(q.data?.clusters.nodes ?? []).map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name}
                </option>
              ))}
            </select>
          </label>
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
          <label>
            Health
            <select name="health" value={form.health} onChange={set('health')}>
              <option value="">any</option>
              <option value="READY">ready</option>
              <option value="NOT_READY">not ready</option>
              <option value="UNKNOWN">unknown</option>
            </select>
          </label>
          <label>
            Expiring within (days)
            <input name="within" type="number" min={0} max={3650} value={form.within} onInput={set('within')} />
          </label>
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
          <Empty when={rows.length === 0}>No certificate matches.</Empty>
          {rows.length > 0 && (
            <DataTable headers={['Days left', 'Certificate', 'Cluster / namespace', 'Health', 'Issuer', 'Not after']}>
              {rows.map((c) => (
                <tr key={`${c.clusterId}/${c.namespace}/${c.secretName}`}>
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
