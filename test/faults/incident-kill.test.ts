/**
 * Fault: the incident scenario with seeded random kill points. One INCIDENT_MGMT integration points at a
 * loopback incident receiver (--incident-events-url). Each run flips one issuer notready/active by posting the
 * emitter's events straight to POST /v1/events, SIGKILLs the serve process at a random point around the flips
 * (before, during or after a POST is accepted, with deliveries in flight), restarts it at once under the same
 * --instance-id, and re-sends the current state as the emitter does after a restart (new ids, same
 * statusTransition). Outcomes per run: the last action the receiver got for the issuer's dedup_key matches the
 * final state posted (trigger for notready, resolve for active), the final event's delivery is DELIVERED and
 * every older one is DELIVERED or SUPERSEDED (nothing lost, nothing left open).
 *
 * Seed: FAULTS_SEED=<n> replays a run sequence; the seed in use is printed.
 */
import { afterAll, describe, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { issuerActive, issuerNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { rng } from '../routing/generators.js';
import { waitFor, type ServiceProcess } from '../e2e/service-process.js';
import { allDeliveries, freshStore, startServe, type DeliveryRow, type Engine } from './support.js';
import { limitsFile } from '../support/limits.js';

/** Kills per engine: at least 2 × 25 = 50 in total. */
const KILLS: Record<Engine, number> = { sqlite: 25, postgres: 25 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type State = 'notready' | 'active';
const actionOf = (s: State) => (s === 'notready' ? 'trigger' : 'resolve');

interface Plan {
  /** States posted in order; always starts notready and alternates (a flap). */
  flips: State[];
  /** After which flip's POST was *started* the kill comes, and how long after that start (ms). */
  kills: { at: number; delayMs: number }[];
  /** Pause between two flips (ms): 0 posts back to back, larger lets deliveries go out between them. */
  gapMs: number[];
}

/** A random plan with 1 or 2 kills around 2–6 flips. */
export function planOf(rand: () => number): Plan {
  const n = 2 + Math.floor(rand() * 5);
  const flips = Array.from({ length: n }, (_, i): State => (i % 2 === 0 ? 'notready' : 'active'));
  const killCount = rand() < 0.3 ? 2 : 1;
  const kills = Array.from({ length: killCount }, () => ({ at: Math.floor(rand() * n), delayMs: Math.floor(rand() * 80) }))
    .sort((a, b) => a.at - b.at)
    .filter((k, i, all) => i === 0 || k.at !== all[i - 1]!.at);
  const gapMs = flips.map(() => (rand() < 0.4 ? 0 : Math.floor(rand() * 150)));
  return { flips, kills, gapMs };
}

// The two engines run concurrently: a restart is ~3–4 s of module loading on the shared 2-core machine, and
// overlapping the two engines' restarts keeps the faults directory near its time budget.
describe.concurrent('random SIGKILLs around issuer flips', () => {
  const procs: ServiceProcess[] = [];
  const receivers: Receiver[] = [];
  afterAll(async () => {
    for (const p of procs) await p.kill();
    for (const r of receivers) await r.close();
  });

  for (const kind of ['sqlite', 'postgres'] as const)
    it(`on ${kind}, ≥ ${KILLS[kind]} kills: the last incident action per dedup_key matches the final state, nothing lost`, async ({
      expect,
    }) => {
      const seed = Number(process.env.FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
      console.log(`[faults] incident ${kind}: seed ${seed} (replay with FAULTS_SEED=${seed})`);
      const rand = rng(seed); // seeded mulberry32: a failing sequence replays from the printed seed
      const pager = await startReceiver((_r, res) => {
        res.statusCode = 202;
        res.end('{"status":"success"}');
      });
      receivers.push(pager);
      const store = freshStore(kind);
      const instance = `faults-incident-${kind}`;
      // Short lease (3 × (2 s + 1 s grace)) so that a claim left by another id would still end inside the test; the same id
      // must not need it at all.
      const args = ['--incident-events-url', pager.url, ...limitsFile({ deliveryRetryBase: '50ms', deliveryTimeout: '2s' })];
      let svc = await startServe(kind, store, instance, args);
      procs.push(svc);
      const p = await svc.gql().request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
        name: 'pager',
        integrationKey: 'R0UTINGKEY-faults-0123456789',
      });
      const integrationId = p.createIncidentMgmtIntegration.id;
      await svc.gql().request(ops.CreateNotificationRouter, {
        details: { name: 'issuers to pager', eventTypeId: 'certmgr-issuer-health-notification-config' },
        filterConfig: { advancedFilterExpression: '' },
        integrationConfig: { integrationId },
      });

      const restart = async () => {
        await svc.kill('SIGKILL');
        svc = await startServe(kind, store, instance, args);
        procs.push(svc);
      };

      let kills = 0;
      let run = 0;
      const summary: string[] = [];
      while (kills < KILLS[kind]) {
        const plan = planOf(rand);
        const issuerName = `flapping-${run}`;
        const resourceId = `00000000-0000-4000-8000-${String(run).padStart(12, '0')}`;
        // Transitions an hour ago, a second apart: in the past, so ordering is by the event's own time.
        const base = Date.now() - 3_600_000;
        const eventOf = (i: number) => {
          const o = { issuerName, resourceId, statusTransition: new Date(base + i * 1000).toISOString() };
          return plan.flips[i] === 'notready' ? issuerNotReady(o) : issuerActive(o);
        };
        let lastEventId: string | undefined;
        for (let i = 0; i < plan.flips.length; i++) {
          const kill = plan.kills.find((k) => k.at === i);
          const posting = svc.postEvents([eventOf(i)]).then(
            (r) => ((lastEventId = r[0]!.id), true),
            () => false, // the kill came before the 202: not accepted, the emitter sends it again
          );
          if (kill) {
            await sleep(kill.delayMs);
            await restart();
            kills++;
            await posting;
            // After its own restart the emitter re-sends the current state: new event id, same statusTransition.
            const r = await svc.postEvents([eventOf(i)]);
            lastEventId = r[0]!.id;
          } else if (!(await posting)) throw new Error(`flip ${i} of run ${run} was refused without a kill`);
          if (plan.gapMs[i]) await sleep(plan.gapMs[i]!);
        }
        const final = plan.flips[plan.flips.length - 1]!;

        // Settled: the final event's delivery is DELIVERED and nothing of the integration is open.
        const rows = await waitFor(
          `run ${run} settled`,
          async () => {
            const fin = await svc
              .gql()
              .request<{ deliveries: { nodes: DeliveryRow[] } }>(
                `query($e: UUID!) { deliveries(filter: { eventId: $e }) { nodes { id status attempts } } }`,
                { e: lastEventId },
              );
            if (fin.deliveries.nodes[0]?.status !== 'DELIVERED') return null;
            const all = await allDeliveries(svc, integrationId);
            return all.some((d) => d.status === 'PENDING' || d.status === 'IN_FLIGHT') ? null : all;
          },
          60_000,
          100,
        );
        expect(
          rows.filter((d) => d.status !== 'DELIVERED' && d.status !== 'SUPERSEDED'),
          `run ${run} seed ${seed}`,
        ).toEqual([]);

        const got = pager.requests
          .map(
            (q) => JSON.parse(q.body) as { event_action: string; dedup_key: string; payload: { custom_details: { issuerName?: string } } },
          )
          .filter((b) => b.payload.custom_details.issuerName === issuerName);
        expect(new Set(got.map((b) => b.dedup_key)).size, `run ${run} seed ${seed}: one dedup_key per issuer`).toBe(1);
        const actions = got.map((b) => b.event_action);
        expect(actions.at(-1), `run ${run} seed ${seed}: plan ${JSON.stringify(plan)}, receiver got ${actions.join(',')}`).toBe(
          actionOf(final),
        );
        summary.push(`${plan.flips.length}f/${plan.kills.length}k:${actions.map((a) => a[0]).join('')}`);
        run++;
      }
      const rows = await allDeliveries(svc, integrationId);
      const superseded = rows.filter((d) => d.status === 'SUPERSEDED').length;
      console.log(
        `[faults] incident ${kind}: seed ${seed}, ${run} runs, ${kills} kills, ${rows.length} deliveries ` +
          `(${rows.length - superseded} DELIVERED, ${superseded} SUPERSEDED), ${pager.requests.length} incident requests; ` +
          `per run flips/kills:actions ${summary.join(' ')}`,
      );
      expect(kills).toBeGreaterThanOrEqual(KILLS[kind]);
    }, 240_000);
});
