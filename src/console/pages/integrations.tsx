import { useState } from 'preact/hooks';
import type { PageProps } from '../app.js';
import { DataTable, Empty, ErrorNote, Loading, PageHeader, SelectField, Tag } from '../components/common.js';
import { ConfirmDelete } from '../components/confirm-delete.js';
import { formatTime, managedNote } from '../format.js';
import { useAction, useQuery } from '../hooks.js';
import { createIntegrationCall, formatRateLimit, INTEGRATION_KINDS, RATE_FIELDS } from '../integration-kinds.js';

interface Integration {
  id: string;
  name: string;
  type: string;
  enabled: boolean;
  emailTo: string[] | null;
  webhookSigned: boolean | null;
  managedBy: string | null;
  rateLimit?: { perSecond: number; burst: number; typeDefault: boolean };
  updatedAt: string;
}

interface TestResult {
  outcome: string;
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
}

const INTEGRATIONS = `query Integrations { integrations { nodes { id name type enabled emailTo webhookSigned managedBy rateLimit { perSecond burst typeDefault } updatedAt } } }`;
const TEST = `mutation TestIntegration($id: UUID!) { testIntegration(id: $id) { outcome statusCode error latencyMs } }`;
const ENABLE = `mutation EnableIntegration($id: UUID!, $enabled: Boolean!) { updateIntegration(id: $id, input: { enabled: $enabled }) { id enabled } }`;
const DELETE = `mutation DeleteIntegration($id: UUID!) { deleteIntegrations(ids: [$id]) { ids } }`;

function CreateIntegration({ api, onCreated }: { api: PageProps['api']; onCreated: () => void }) {
  const [type, setType] = useState('WEBHOOK');
  const [name, setName] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  const action = useAction();
  const kind = INTEGRATION_KINDS.find((k) => k.type === type) ?? INTEGRATION_KINDS[0]!;
  const submit = async (e: Event) => {
    e.preventDefault();
    const done = await action.run(async () => {
      const call = createIntegrationCall(type, name.trim(), values);
      return api(call.mutation, call.variables);
    });
    if (done) {
      setName('');
      setValues({});
      onCreated();
    }
  };
  return (
    <details>
      <summary role="button" class="secondary">
        New integration
      </summary>
      <form onSubmit={submit} aria-label="New integration">
        <div class="grid">
          <SelectField
            label="Type"
            name="type"
            value={type}
            options={INTEGRATION_KINDS.map((k) => ({ value: k.type, label: k.label }))}
            onChange={setType}
          />
          <label>
            Name
            <input name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
        </div>
        {kind.fields.map((f) => (
          <label key={`${type}.${f.name}`}>
            {f.label}
            {f.optional ? ' (optional)' : ''}
            {f.multiline ? (
              <textarea
                name={f.name}
                rows={3}
                value={values[f.name] ?? ''}
                onInput={(e) => setValues({ ...values, [f.name]: e.currentTarget.value })}
                aria-describedby={f.hint ? `hint-${f.name}` : undefined}
              />
            ) : f.secret ? (
              <input
                name={f.name}
                type="password"
                autoComplete="off"
                required={!f.optional}
                value={values[f.name] ?? ''}
                onInput={(e) => setValues({ ...values, [f.name]: e.currentTarget.value })}
                aria-describedby={f.hint ? `hint-${f.name}` : undefined}
              />
            ) : (
              <input
                name={f.name}
                type="text"
                required={!f.optional}
                value={values[f.name] ?? ''}
                onInput={(e) => setValues({ ...values, [f.name]: e.currentTarget.value })}
                aria-describedby={f.hint ? `hint-${f.name}` : undefined}
              />
            )}
            {f.hint && <small id={`hint-${f.name}`}>{f.hint}</small>}
          </label>
        ))}
        <div class="grid">
          <label>
            Rate limit: sends per second (optional)
            <input
              name={RATE_FIELDS.perSecond}
              type="number"
              min="0"
              step="any"
              value={values[RATE_FIELDS.perSecond] ?? ''}
              onInput={(e) => setValues({ ...values, [RATE_FIELDS.perSecond]: e.currentTarget.value })}
              aria-describedby="hint-rate"
            />
            <small id="hint-rate">Empty: the vendor's documented limit. 0: unlimited, for your own receivers.</small>
          </label>
          <label>
            Burst (optional)
            <input
              name={RATE_FIELDS.burst}
              type="number"
              min="1"
              step="1"
              value={values[RATE_FIELDS.burst] ?? ''}
              onInput={(e) => setValues({ ...values, [RATE_FIELDS.burst]: e.currentTarget.value })}
            />
          </label>
        </div>
        <ErrorNote error={action.error} />
        <button type="submit" aria-busy={action.pending ? 'true' : undefined} disabled={action.pending}>
          Create integration
        </button>
      </form>
    </details>
  );
}

export function IntegrationsPage({ api, canWrite }: PageProps) {
  const q = useQuery<{ integrations: { nodes: Integration[] } }>(api, INTEGRATIONS);
  const [results, setResults] = useState<Record<string, TestResult>>({});
  const action = useAction();
  const rows = q.data?.integrations.nodes ?? [];

  const test = async (id: string) => {
    const r = await action.run(() => api<{ testIntegration: TestResult }>(TEST, { id }));
    if (r) setResults({ ...results, [id]: r.testIntegration });
  };
  const toggle = async (i: Integration) => {
    await action.run(() => api(ENABLE, { id: i.id, enabled: !i.enabled }));
    q.reload();
  };

  return (
    <section>
      <PageHeader title="Integrations" />
      <p>Where notifications go. URLs, keys and secrets are write-only: the hub never shows them again.</p>
      {canWrite && <CreateIntegration api={api} onCreated={q.reload} />}
      <ErrorNote error={q.error} />
      <ErrorNote error={action.error} />
      <Loading loading={q.loading && !q.data} />
      <Empty when={!!q.data && rows.length === 0}>
        No integration yet: an integration is where notifications go.{' '}
        {canWrite
          ? 'Create one above (a webhook URL is enough to start) and send it a test, then add a router on the Routers page.'
          : 'An admin key creates them here, or a NotificationProvider resource in a cluster running the operator.'}
      </Empty>
      {rows.length > 0 && (
        <DataTable headers={['Name', 'Type', 'State', 'Details', canWrite && 'Actions']}>
          {rows.map((i) => {
            const r = results[i.id];
            return (
              <tr key={i.id} data-integration={i.name}>
                <td>
                  <strong>{i.name}</strong>
                  <br />
                  <small>updated {formatTime(i.updatedAt)}</small>
                </td>
                <td>{i.type}</td>
                <td>
                  <Tag value={i.enabled ? 'ENABLED' : 'DISABLED'} />
                </td>
                <td>
                  <small>
                    {i.emailTo ? `to ${i.emailTo.join(', ')}` : ''}
                    {i.webhookSigned !== null ? (i.webhookSigned ? 'signed' : 'unsigned') : ''}
                    {i.managedBy ? ` · managed by ${i.managedBy}` : ''}
                    {i.rateLimit ? ` · rate ${formatRateLimit(i.rateLimit)}` : ''}
                  </small>
                  {r && (
                    <p role="status" class="test-result">
                      Test: <Tag value={r.outcome.toUpperCase()} /> {r.statusCode !== null ? `HTTP ${r.statusCode}` : ''} in {r.latencyMs}{' '}
                      ms
                      {r.error ? ` · ${r.error}` : ''}
                    </p>
                  )}
                </td>
                {canWrite && (
                  <td class="actions">
                    <button
                      type="button"
                      class="outline"
                      disabled={action.pending}
                      onClick={() => test(i.id)}
                      aria-label={`Send test to ${i.name}`}
                    >
                      Send test
                    </button>
                    <button
                      type="button"
                      class="secondary outline"
                      disabled={action.pending}
                      onClick={() => toggle(i)}
                      aria-label={`${i.enabled ? 'Disable' : 'Enable'} ${i.name}`}
                    >
                      {i.enabled ? 'Disable' : 'Enable'}
                    </button>
                    <ConfirmDelete
                      what="integration"
                      name={i.name}
                      note={managedNote(i.managedBy)}
                      disabled={action.pending}
                      onConfirm={() => api(DELETE, { id: i.id })}
                      onDeleted={q.reload}
                    />
                  </td>
                )}
              </tr>
            );
          })}
        </DataTable>
      )}
    </section>
  );
}
