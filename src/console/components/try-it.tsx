import { useState } from 'preact/hooks';
import type { Api } from '../api.js';
import { formatTime } from '../format.js';
import { useAction, useQuery } from '../hooks.js';
import type { EventType } from '../pages/routers.js';
import { sampleData } from '../samples.js';
import { ErrorNote, SelectField, Tag } from './common.js';

interface Simulation {
  eventType: string;
  monitored: boolean;
  routers: { router: { id: string; name: string }; wouldNotify: boolean; verdict: string; error: string | null }[];
}

const EVENTS = `query RecentEvents { events(first: 20) { nodes { id type data receivedAt } } }`;
const SIMULATE = `query Simulate($event: EventInput!) {
  simulateRouting(event: $event) { eventType monitored routers { router { id name } wouldNotify verdict error } }
}`;

/** Runs simulateRouting on a sample event of a type, or on a recent stored event: sends nothing, stores nothing. */
export function TryIt({ api, eventTypes }: { api: Api; eventTypes: EventType[] }) {
  const types = eventTypes.flatMap((t) => t.types);
  const [type, setType] = useState(types[0] ?? '');
  const [data, setData] = useState(() => sampleData(types[0] ?? ''));
  const recent = useQuery<{ events: { nodes: { id: string; type: string; data: unknown; receivedAt: string }[] } }>(api, EVENTS);
  const [result, setResult] = useState<Simulation | undefined>();
  const action = useAction();

  const pickType = (t: string) => {
    setType(t);
    setData(sampleData(t));
  };
  const pickEvent = (id: string) => {
    const ev = recent.data?.events.nodes.find((e) => e.id === id);
    if (!ev) return;
    setType(ev.type);
    setData(JSON.stringify(ev.data, null, 2));
  };
  const run = async (e: Event) => {
    e.preventDefault();
    const r = await action.run(async () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(data);
      } catch (err) {
        throw new Error(`event data is not JSON: ${(err as Error).message}`, { cause: err });
      }
      return api<{ simulateRouting: Simulation }>(SIMULATE, { event: { type, data: parsed } });
    });
    setResult(r?.simulateRouting);
  };

  return (
    <article class="try-it">
      <h2>Try it</h2>
      <p>Which routers would fire for an event, and why. Sends nothing, stores nothing.</p>
      <form onSubmit={run} aria-label="Try routing">
        <div class="grid">
          <SelectField label="Event type" name="try-type" value={type} options={types} onChange={pickType} />
          <SelectField
            label="Or a recent event"
            name="try-recent"
            value=""
            options={[
              { value: '', label: recent.error ? 'recent events unavailable' : 'choose…' },
              ...(recent.data?.events.nodes ?? []).map((ev) => ({ value: ev.id, label: `${formatTime(ev.receivedAt)} ${ev.type}` })),
            ]}
            onChange={pickEvent}
          />
        </div>
        <label>
          Event data (JSON)
          <textarea name="try-data" class="code" rows={8} spellcheck={false} value={data} onInput={(e) => setData(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={action.pending}>
          Simulate
        </button>
      </form>
      <ErrorNote error={action.error} />
      {result && (
        <div role="status" class="simulation">
          {!result.monitored && <p>This application is not monitored: expiration events for it are not routed.</p>}
          {result.routers.length === 0 ? (
            <p>No router of this family.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Router</th>
                  <th scope="col">Verdict</th>
                  <th scope="col">Detail</th>
                </tr>
              </thead>
              <tbody>
                {result.routers.map((r) => (
                  <tr key={r.router.id}>
                    <td>{r.router.name}</td>
                    <td>
                      <Tag value={r.verdict} /> {r.wouldNotify ? 'would notify' : 'would not notify'}
                    </td>
                    <td>
                      <small>{r.error ?? ''}</small>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
    </article>
  );
}
