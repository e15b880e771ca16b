import { useState } from 'preact/hooks';
import type { PageProps } from '../app.js';
import { DataTable, Empty, ErrorNote, Loading, PageHeader, SelectField, Tag } from '../components/common.js';
import { endAfter, formatTime, localInputToIso, SILENCE_PRESETS } from '../format.js';
import { useAction, useQuery } from '../hooks.js';

interface Silence {
  id: string;
  matcher: string;
  eventTypeIds: string[];
  startsAt: string;
  endsAt: string;
  comment: string;
  createdBy: string;
  managedBy: string | null;
  state: string;
}

const SILENCES = `query Silences($state: SilenceState) {
  silences(state: $state, first: 500) { nodes { id matcher eventTypeIds startsAt endsAt comment createdBy managedBy state } }
  eventTypes { id displayName }
}`;
const CREATE = `mutation CreateSilence($input: CreateSilenceInput!) { createSilence(input: $input) { id } }`;
const EXPIRE = `mutation ExpireSilence($id: UUID!) { expireSilence(id: $id) { id state } }`;

function CreateSilence({
  api,
  eventTypes,
  onCreated,
}: {
  api: PageProps['api'];
  eventTypes: { id: string; displayName: string }[];
  onCreated: () => void;
}) {
  const [f, setF] = useState({ matcher: 'true', eventTypeId: '', startsAt: '', endsAt: '', comment: '' });
  const action = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    const done = await action.run(async () => {
      const endsAt = localInputToIso(f.endsAt);
      if (!endsAt) throw new Error('Ends at: give a date and time (UTC)');
      return api(CREATE, {
        input: {
          matcher: f.matcher,
          endsAt,
          startsAt: localInputToIso(f.startsAt),
          comment: f.comment,
          eventTypeId: f.eventTypeId || undefined,
        },
      });
    });
    if (done) {
      setF({ matcher: 'true', eventTypeId: '', startsAt: '', endsAt: '', comment: '' });
      onCreated();
    }
  };
  return (
    <details>
      <summary role="button" class="secondary">
        New silence
      </summary>
      <form onSubmit={submit} aria-label="New silence">
        <label>
          Matcher (CEL over type and data; true silences everything)
          <textarea
            name="matcher"
            class="code"
            rows={2}
            required
            value={f.matcher}
            onInput={(e) => setF({ ...f, matcher: e.currentTarget.value })}
          />
        </label>
        <div class="grid">
          <SelectField
            label="Event family"
            name="family"
            value={f.eventTypeId}
            options={[
              { value: '', label: 'every family the matcher compiles for' },
              ...eventTypes.map((t) => ({ value: t.id, label: t.displayName })),
            ]}
            onChange={(eventTypeId) => setF({ ...f, eventTypeId })}
          />
          <label>
            Starts at (UTC, empty: now)
            <input
              name="starts-at"
              type="datetime-local"
              value={f.startsAt}
              onInput={(e) => setF({ ...f, startsAt: e.currentTarget.value })}
            />
          </label>
          <label>
            Ends at (UTC)
            <input
              name="ends-at"
              type="datetime-local"
              required
              value={f.endsAt}
              onInput={(e) => setF({ ...f, endsAt: e.currentTarget.value })}
            />
          </label>
        </div>
        <div class="silence-presets" role="group" aria-label="Duration">
          <small>Lasts</small>
          {SILENCE_PRESETS.map(([label, ms]) => (
            <button
              key={label}
              type="button"
              class="secondary outline"
              aria-label={`Lasts ${label}`}
              onClick={() => setF({ ...f, endsAt: endAfter(f.startsAt, Date.now(), ms) })}
            >
              {label}
            </button>
          ))}
        </div>
        <label>
          Comment
          <input name="comment" required value={f.comment} onInput={(e) => setF({ ...f, comment: e.currentTarget.value })} />
        </label>
        <ErrorNote error={action.error} />
        <button type="submit" disabled={action.pending}>
          Create silence
        </button>
      </form>
    </details>
  );
}

export function SilencesPage({ api, canWrite }: PageProps) {
  const [state, setState] = useState('');
  const q = useQuery<{ silences: { nodes: Silence[] }; eventTypes: { id: string; displayName: string }[] }>(api, SILENCES, {
    state: state || null,
  });
  const action = useAction();
  const rows = q.data?.silences.nodes ?? [];
  const expire = async (id: string) => {
    await action.run(() => api(EXPIRE, { id }));
    q.reload();
  };
  return (
    <section>
      <PageHeader title="Silences" />
      <p>Maintenance windows: while a silence is active, the notifications it matches are recorded SILENCED and not sent.</p>
      {canWrite && q.data && <CreateSilence api={api} eventTypes={q.data.eventTypes} onCreated={q.reload} />}
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <SelectField
          label="State"
          name="state"
          value={state}
          options={[
            { value: '', label: 'any' },
            { value: 'PENDING', label: 'pending' },
            { value: 'ACTIVE', label: 'active' },
            { value: 'EXPIRED', label: 'expired' },
          ]}
          onChange={setState}
        />
      </form>
      <ErrorNote error={q.error} />
      <ErrorNote error={action.error} />
      <Loading loading={q.loading && !q.data} />
      <Empty when={!!q.data && rows.length === 0}>
        {state ? `No ${state.toLowerCase()} silence.` : 'No silence yet.'}{' '}
        {canWrite
          ? 'Before maintenance, create one above: a matcher (true: everything) and how long it lasts.'
          : 'An admin key creates them here, or a NotificationSilence resource in a cluster running the operator.'}
      </Empty>
      {rows.length > 0 && (
        <DataTable headers={['State', 'Matcher', 'Window', 'Comment', canWrite && 'Action']}>
          {rows.map((s) => (
            <tr key={s.id}>
              <td>
                <Tag value={s.state} />
              </td>
              <td>
                <code>{s.matcher}</code>
                <br />
                <small>{s.eventTypeIds.join(', ')}</small>
              </td>
              <td>
                {formatTime(s.startsAt)} → {formatTime(s.endsAt)}
              </td>
              <td>
                {s.comment}
                <br />
                <small>
                  by {s.createdBy}
                  {s.managedBy ? ` · managed by ${s.managedBy}` : ''}
                </small>
              </td>
              {canWrite && (
                <td>
                  {s.state !== 'EXPIRED' && (
                    <button
                      type="button"
                      class="secondary outline"
                      disabled={action.pending}
                      onClick={() => expire(s.id)}
                      aria-label={`Expire silence ${s.comment}`}
                    >
                      Expire
                    </button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}
