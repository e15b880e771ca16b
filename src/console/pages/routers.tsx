import { useState } from 'preact/hooks';
import type { PageProps } from '../app.js';
import { CelEditor } from '../components/cel-editor.js';
import { DataTable, Empty, ErrorNote, Loading, PageHeader, SelectField, Tag } from '../components/common.js';
import { ConfirmDelete } from '../components/confirm-delete.js';
import { managedNote } from '../format.js';
import { TryIt } from '../components/try-it.js';
import { useAction, useQuery } from '../hooks.js';

export interface EventType {
  id: string;
  displayName: string;
  types: string[];
}

interface Router {
  id: string;
  name: string;
  enabled: boolean;
  generation: 'ROUTER' | 'ROUTING_CONFIGURATION';
  managedBy: string | null;
  eventType: { id: string; displayName: string };
  notificationRouterFilterConfig: { advancedFilterExpression: string | null };
  notificationRouterIntegrationConfig: { notificationRouterIntegrationID: string; notificationRouterTemplateID: string | null };
}

const ROUTERS = `query Routers {
  searchNotificationRoutingConfigurations {
    nodes {
      id name enabled generation managedBy
      eventType { id displayName }
      notificationRouterFilterConfig { advancedFilterExpression }
      notificationRouterIntegrationConfig { notificationRouterIntegrationID notificationRouterTemplateID }
    }
  }
  eventTypes { id displayName types }
  integrations { nodes { id name type } }
  notificationTemplates { nodes { id name } }
}`;

const CREATE = `mutation CreateRouter($details: NotificationRouterConfigDetailsInput!, $filterConfig: NotificationRouterFilterConfigInput!, $integrationConfig: NotificationRouterIntegrationConfigurationInput!) {
  createNotificationRouter(details: $details, filterConfig: $filterConfig, integrationConfig: $integrationConfig) { id }
}`;
const UPDATE = `mutation UpdateRouter($id: UUID!, $input: UpdateNotificationRouterConfigurationInput!) {
  updateNotificationRouter(id: $id, updateNotificationRouterConfigurationInput: $input) { id enabled }
}`;
const DELETE = `mutation DeleteRouter($id: UUID!) { deleteNotificationRouter(ids: [$id]) { ids } }`;
const ENABLE_OLD = `mutation EnableRoutingConfiguration($id: UUID!, $enabled: Boolean) { updateNotificationRoutingConfiguration(id: $id, enabled: $enabled) { id enabled } }`;

type Data = {
  searchNotificationRoutingConfigurations: { nodes: Router[] };
  eventTypes: EventType[];
  integrations: { nodes: { id: string; name: string; type: string }[] };
  notificationTemplates: { nodes: { id: string; name: string }[] };
};

interface Draft {
  id?: string;
  name: string;
  eventTypeId: string;
  integrationId: string;
  templateId: string;
  filter: string;
  enabled: boolean;
}

function RouterForm({ api, data, draft, onDone }: { api: PageProps['api']; data: Data; draft: Draft; onDone: (saved: boolean) => void }) {
  const [d, setD] = useState(draft);
  const [valid, setValid] = useState<boolean | undefined>();
  const action = useAction();
  const editing = d.id !== undefined;
  const submit = async (e: Event) => {
    e.preventDefault();
    const ok = await action.run(() =>
      editing
        ? api(UPDATE, {
            id: d.id,
            input: {
              name: d.name,
              eventTypeId: d.eventTypeId,
              integrationId: d.integrationId,
              // no way to clear a template through this input: an empty choice keeps the stored one out of the request
              templateId: d.templateId || undefined,
              advancedFilterExpression: d.filter,
              enabled: d.enabled,
            },
          })
        : api(CREATE, {
            details: { name: d.name, eventTypeId: d.eventTypeId, enabled: d.enabled },
            filterConfig: { advancedFilterExpression: d.filter },
            integrationConfig: { integrationId: d.integrationId, templateId: d.templateId || undefined },
          }),
    );
    if (ok) onDone(true);
  };
  return (
    <form onSubmit={submit} aria-label={editing ? `Edit router ${draft.name}` : 'New router'} class="router-form">
      <h2>{editing ? `Edit ${draft.name}` : 'New router'}</h2>
      <div class="grid">
        <label>
          Name
          <input name="router-name" required value={d.name} onInput={(e) => setD({ ...d, name: e.currentTarget.value })} />
        </label>
        <SelectField
          label="Event family"
          name="event-type"
          value={d.eventTypeId}
          options={data.eventTypes.map((t) => ({ value: t.id, label: t.displayName }))}
          onChange={(eventTypeId) => setD({ ...d, eventTypeId })}
        />
      </div>
      <div class="grid">
        <SelectField
          label="Integration"
          name="integration"
          required
          value={d.integrationId}
          options={[
            { value: '', label: 'choose…', disabled: true },
            ...data.integrations.nodes.map((i) => ({ value: i.id, label: `${i.name} (${i.type})` })),
          ]}
          onChange={(integrationId) => setD({ ...d, integrationId })}
        />
        <SelectField
          label="Template"
          name="template"
          value={d.templateId}
          options={[
            { value: '', label: "the integration's default text" },
            ...data.notificationTemplates.nodes.map((t) => ({ value: t.id, label: t.name })),
          ]}
          onChange={(templateId) => setD({ ...d, templateId })}
        />
      </div>
      <CelEditor
        api={api}
        id="router-filter"
        label="Filter (CEL over type and data)"
        eventTypeId={d.eventTypeId}
        value={d.filter}
        onChange={(filter) => setD({ ...d, filter })}
        onValidity={setValid}
      />
      <label>
        <input
          type="checkbox"
          role="switch"
          name="enabled"
          checked={d.enabled}
          onChange={(e) => setD({ ...d, enabled: e.currentTarget.checked })}
        />
        Enabled
      </label>
      <ErrorNote error={action.error} />
      <div class="actions">
        <button type="submit" disabled={action.pending || valid === false} aria-busy={action.pending ? 'true' : undefined}>
          {editing ? 'Save router' : 'Create router'}
        </button>
        <button type="button" class="secondary outline" onClick={() => onDone(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function RoutersPage({ api, canWrite }: PageProps) {
  const q = useQuery<Data>(api, ROUTERS);
  const [draft, setDraft] = useState<Draft | undefined>();
  const action = useAction();
  const data = q.data;
  const routers = data?.searchNotificationRoutingConfigurations.nodes ?? [];
  const integrationName = (id: string) => data?.integrations.nodes.find((i) => i.id === id)?.name ?? 'deleted integration';

  const toggle = async (r: Router) => {
    await action.run(() =>
      r.generation === 'ROUTER'
        ? api(UPDATE, { id: r.id, input: { enabled: !r.enabled } })
        : api(ENABLE_OLD, { id: r.id, enabled: !r.enabled }),
    );
    q.reload();
  };
  const newDraft = (): Draft => ({
    name: '',
    eventTypeId: data?.eventTypes[0]?.id ?? '',
    integrationId: data?.integrations.nodes[0]?.id ?? '',
    templateId: '',
    filter: '',
    enabled: true,
  });

  return (
    <section>
      <PageHeader title="Routers">
        {canWrite && data && !draft && (
          <button type="button" onClick={() => setDraft(newDraft())}>
            New router
          </button>
        )}
      </PageHeader>
      <p>A router sends the events of one family that its filter accepts to one integration.</p>
      <ErrorNote error={q.error} />
      <ErrorNote error={action.error} />
      <Loading loading={q.loading && !q.data} />
      {data && draft && (
        <RouterForm
          key={draft.id ?? 'new'}
          api={api}
          data={data}
          draft={draft}
          onDone={(saved) => {
            setDraft(undefined);
            if (saved) q.reload();
          }}
        />
      )}
      <Empty when={!!data && routers.length === 0}>
        No router yet: events are recorded but nobody is notified.{' '}
        {!canWrite
          ? 'An admin key creates routers here, or a NotificationRouter resource in a cluster running the operator.'
          : data?.integrations.nodes.length
            ? 'Create one with New router: an event family, a filter (empty: every event) and an integration. Try it below first.'
            : 'Create an integration on the Integrations page first (where notifications go), then a router here.'}
      </Empty>
      {routers.length > 0 && (
        <DataTable headers={['Name', 'Family', 'Filter', 'Integration', 'State', canWrite && 'Actions']}>
          {routers.map((r) => (
            <tr key={r.id} data-router={r.name}>
              <td>
                <strong>{r.name}</strong>
                {r.managedBy && (
                  <>
                    <br />
                    <small>managed by {r.managedBy}</small>
                  </>
                )}
              </td>
              <td>{r.eventType.displayName}</td>
              <td>
                <code>{r.notificationRouterFilterConfig.advancedFilterExpression || 'every event'}</code>
              </td>
              <td>{integrationName(r.notificationRouterIntegrationConfig.notificationRouterIntegrationID)}</td>
              <td>
                <Tag value={r.enabled ? 'ENABLED' : 'DISABLED'} />
              </td>
              {canWrite && (
                <td class="actions">
                  {r.generation === 'ROUTER' && (
                    <button
                      type="button"
                      class="outline"
                      aria-label={`Edit ${r.name}`}
                      onClick={() =>
                        setDraft({
                          id: r.id,
                          name: r.name,
                          eventTypeId: r.eventType.id,
                          integrationId: r.notificationRouterIntegrationConfig.notificationRouterIntegrationID,
                          templateId: r.notificationRouterIntegrationConfig.notificationRouterTemplateID ?? '',
                          filter: r.notificationRouterFilterConfig.advancedFilterExpression ?? '',
                          enabled: r.enabled,
                        })
                      }
                    >
                      Edit
                    </button>
                  )}
                  <button
                    type="button"
                    class="secondary outline"
                    disabled={action.pending}
                    aria-label={`${r.enabled ? 'Disable' : 'Enable'} ${r.name}`}
                    onClick={() => toggle(r)}
                  >
                    {r.enabled ? 'Disable' : 'Enable'}
                  </button>
                  <ConfirmDelete
                    what="router"
                    name={r.name}
                    note={managedNote(r.managedBy)}
                    disabled={action.pending}
                    onConfirm={() => api(DELETE, { id: r.id })}
                    onDeleted={q.reload}
                  />
                </td>
              )}
            </tr>
          ))}
        </DataTable>
      )}
      {data && <TryIt api={api} eventTypes={data.eventTypes} />}
    </section>
  );
}
