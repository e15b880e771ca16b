import { useState } from 'preact/hooks';
import { INTEGRATION_TYPES } from '../../model/integration-types.js';
import type { PageProps } from '../app.js';
import { DataTable, Empty, ErrorNote, Loading, PageHeader } from '../components/common.js';
import { formatTime } from '../format.js';
import { useAction, useQuery } from '../hooks.js';

const PART_KEYS = ['default', ...INTEGRATION_TYPES] as const;
type PartKey = (typeof PART_KEYS)[number];
interface Part {
  title: string | null;
  text: string | null;
  body: string | null;
}
type Parts = Partial<Record<PartKey, Part | null>>;

interface Template {
  id: string;
  name: string;
  managedBy: string | null;
  updatedAt: string;
  parts: Parts;
}

const PART_SELECTION = '{ title text body }';
const TEMPLATES = `query Templates { notificationTemplates { nodes { id name managedBy updatedAt parts { ${PART_KEYS.map((k) => `${k} ${PART_SELECTION}`).join(' ')} } } } }`;
const CREATE = `mutation CreateTemplate($input: CreateNotificationTemplateInput!) { createNotificationTemplate(input: $input) { id } }`;
const UPDATE = `mutation UpdateTemplate($id: UUID!, $input: UpdateNotificationTemplateInput!) { updateNotificationTemplate(id: $id, input: $input) { id } }`;

/** The parts to send: empty fields dropped, parts with no field left out (the given parts replace the stored ones). */
function partsInput(parts: Parts): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const k of PART_KEYS) {
    const p = parts[k];
    if (!p) continue;
    const fields = Object.fromEntries(Object.entries(p).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''));
    if (Object.keys(fields).length) out[k] = fields;
  }
  return out;
}

function TemplateForm({ api, template, onDone }: { api: PageProps['api']; template?: Template; onDone: (saved: boolean) => void }) {
  const [name, setName] = useState(template?.name ?? '');
  const [parts, setParts] = useState<Parts>(template?.parts ?? { default: { title: '{{ event.type }}', text: '', body: null } });
  const [key, setKey] = useState<PartKey>('default');
  const action = useAction();
  const part = parts[key] ?? { title: null, text: null, body: null };
  const setField = (f: keyof Part, v: string) => setParts({ ...parts, [key]: { ...part, [f]: v } });
  const submit = async (e: Event) => {
    e.preventDefault();
    const ok = await action.run(() =>
      template
        ? api(UPDATE, { id: template.id, input: { name, parts: partsInput(parts) } })
        : api(CREATE, { input: { name, parts: partsInput(parts) } }),
    );
    if (ok) onDone(true);
  };
  return (
    <form onSubmit={submit} aria-label={template ? `Edit template ${template.name}` : 'New template'}>
      <h2>{template ? `Edit ${template.name}` : 'New template'}</h2>
      <div class="grid">
        <label>
          Name
          <input name="template-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Part
          <select name="part" value={key} onChange={(e) => setKey(e.currentTarget.value as PartKey)}>
            {PART_KEYS.map((k) => (
              <option key={k} value={k}>
                {k === 'default' ? 'default (types without their own part)' : k}
                {parts[k] && partsInput({ [k]: parts[k] })[k] ? ' ✓' : ''}
              </option>
            ))}
          </select>
        </label>
      </div>
      <label>
        Title (Liquid)
        <input name="part-title" class="code" value={part.title ?? ''} onInput={(e) => setField('title', e.currentTarget.value)} />
      </label>
      <label>
        Text (Liquid)
        <textarea name="part-text" class="code" rows={5} value={part.text ?? ''} onInput={(e) => setField('text', e.currentTarget.value)} />
      </label>
      {key === 'GENERIC_WEBHOOK' && (
        <label>
          Body (Liquid, JSON once rendered)
          <textarea
            name="part-body"
            class="code"
            rows={5}
            value={part.body ?? ''}
            onInput={(e) => setField('body', e.currentTarget.value)}
          />
        </label>
      )}
      <ErrorNote error={action.error} />
      <div class="actions">
        <button type="submit" disabled={action.pending}>
          {template ? 'Save template' : 'Create template'}
        </button>
        <button type="button" class="secondary outline" onClick={() => onDone(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function TemplatesPage({ api, canWrite }: PageProps) {
  const q = useQuery<{ notificationTemplates: { nodes: Template[] } }>(api, TEMPLATES);
  const [editing, setEditing] = useState<Template | 'new' | undefined>();
  const rows = q.data?.notificationTemplates.nodes ?? [];
  return (
    <section>
      <PageHeader title="Templates">
        {canWrite && !editing && (
          <button type="button" onClick={() => setEditing('new')}>
            New template
          </button>
        )}
      </PageHeader>
      <p>Liquid texts per integration type that routers can use instead of the default message (docs/templates.md).</p>
      {editing && (
        <TemplateForm
          key={editing === 'new' ? 'new' : editing.id}
          api={api}
          template={editing === 'new' ? undefined : editing}
          onDone={(saved) => {
            setEditing(undefined);
            if (saved) q.reload();
          }}
        />
      )}
      <ErrorNote error={q.error} />
      <Loading loading={q.loading && !q.data} />
      <Empty when={!!q.data && rows.length === 0}>No template yet.</Empty>
      {rows.length > 0 && (
        <DataTable headers={['Name', 'Parts', 'Updated', canWrite && 'Action']}>
          {rows.map((t) => (
            <tr key={t.id}>
              <td>
                <strong>{t.name}</strong>
                {t.managedBy && (
                  <>
                    <br />
                    <small>managed by {t.managedBy}</small>
                  </>
                )}
              </td>
              <td>
                <small>{PART_KEYS.filter((k) => t.parts[k]).join(', ') || '—'}</small>
              </td>
              <td>{formatTime(t.updatedAt)}</td>
              {canWrite && (
                <td>
                  <button type="button" class="outline" aria-label={`Edit template ${t.name}`} onClick={() => setEditing(t)}>
                    Edit
                  </button>
                </td>
              )}
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}
