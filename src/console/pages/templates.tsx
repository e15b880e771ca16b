import { useEffect, useState } from 'preact/hooks';
import { INTEGRATION_TYPES } from '../../model/integration-types.js';
import type { PageProps } from '../app.js';
import { DataTable, Empty, ErrorNote, Loading, PageHeader, SelectField } from '../components/common.js';
import { ConfirmDelete } from '../components/confirm-delete.js';
import { formatTime, managedNote } from '../format.js';
import { useAction, useQuery } from '../hooks.js';
import { SAMPLE_TYPES, sampleData } from '../samples.js';

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
const DELETE = `mutation DeleteTemplate($id: UUID!) { deleteNotificationTemplates(ids: [$id]) { ids } }`;
const PREVIEW = `query PreviewTemplate($parts: NotificationTemplatePartsInput!, $event: EventInput!, $type: IntegrationType!) {
  previewNotificationTemplate(parts: $parts, event: $event, integrationType: $type) { title text body error }
}`;

interface Rendered {
  title: string | null;
  text: string | null;
  body: string | null;
  error: string | null;
}

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

/**
 * Renders the parts being edited on a sample event through the hub (previewNotificationTemplate: the same engine
 * and limits as a delivery). Nothing is saved or sent.
 */
function TemplatePreview({ api, parts, partKey }: { api: PageProps['api']; parts: Parts; partKey: PartKey }) {
  const [type, setType] = useState<string>(partKey === 'default' ? 'SLACK' : partKey);
  const [eventType, setEventType] = useState(SAMPLE_TYPES[0] ?? '');
  const [result, setResult] = useState<Rendered | undefined>();
  const action = useAction();
  // editing a type's part previews that type
  useEffect(() => {
    if (partKey !== 'default') setType(partKey);
  }, [partKey]);
  const run = async () => {
    setResult(undefined);
    const r = await action.run(() =>
      api<{ previewNotificationTemplate: Rendered }>(PREVIEW, {
        parts: partsInput(parts),
        event: { type: eventType, data: JSON.parse(sampleData(eventType)) as unknown },
        type,
      }),
    );
    setResult(r?.previewNotificationTemplate);
  };
  const field = (label: string, v: string | null) => (
    <>
      <dt>{label}</dt>
      <dd>{v === null ? <small>the integration's own {label.toLowerCase()}</small> : <pre data-field={label.toLowerCase()}>{v}</pre>}</dd>
    </>
  );
  return (
    <article class="template-preview" aria-label="Template preview">
      <h3>Preview</h3>
      <div class="grid">
        <SelectField label="Preview as" name="preview-type" value={type} options={INTEGRATION_TYPES} onChange={setType} />
        <SelectField label="Sample event" name="preview-event" value={eventType} options={SAMPLE_TYPES} onChange={setEventType} />
      </div>
      <button type="button" class="secondary" disabled={action.pending} aria-busy={action.pending ? 'true' : undefined} onClick={run}>
        Preview
      </button>
      <ErrorNote error={action.error} />
      {result && (
        <div role="status">
          {result.error ? (
            <p class="error-note">Not rendered, the default message would be sent: {result.error}</p>
          ) : (
            <dl>
              {field('Title', result.title)}
              {field('Text', result.text)}
              {type === 'GENERIC_WEBHOOK' && field('Body', result.body)}
            </dl>
          )}
        </div>
      )}
    </article>
  );
}

function TemplateForm({
  api,
  template,
  onDone,
}: {
  api: PageProps['api'];
  template?: Template | undefined;
  onDone: (saved: boolean) => void;
}) {
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
        <SelectField
          label="Part"
          name="part"
          value={key}
          options={PART_KEYS.map((k) => ({
            value: k,
            label: `${k === 'default' ? 'default (types without their own part)' : k}${parts[k] && partsInput({ [k]: parts[k] })[k] ? ' ✓' : ''}`,
          }))}
          onChange={setKey}
        />
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
      <TemplatePreview api={api} parts={parts} partKey={key} />
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
      <Empty when={!!q.data && rows.length === 0 && !editing}>
        No template yet: every router sends its integration's default message.{' '}
        {canWrite
          ? 'Create one with New template to write your own titles and texts (preview them on a sample event), then choose it in a router.'
          : 'An admin key creates them here, or a NotificationTemplate resource in a cluster running the operator.'}
      </Empty>
      {rows.length > 0 && (
        <DataTable headers={['Name', 'Parts', 'Updated', canWrite && 'Actions']}>
          {rows.map((t) => (
            <tr key={t.id} data-template={t.name}>
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
                <td class="actions">
                  <button type="button" class="outline" aria-label={`Edit template ${t.name}`} onClick={() => setEditing(t)}>
                    Edit
                  </button>
                  <ConfirmDelete
                    what="template"
                    name={t.name}
                    note={managedNote(t.managedBy)}
                    onConfirm={() => api(DELETE, { id: t.id })}
                    onDeleted={q.reload}
                  />
                </td>
              )}
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}
