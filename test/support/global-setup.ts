/**
 * vitest globalSetup: starts the external services the tests need, once per run, and returns a
 * teardown that stops them in reverse order. Each service lives in its own module and returns its
 * own teardown; add new ones to SETUPS.
 */
import { setupBinary } from './binary.js';
import { setupPostgres } from './postgres.js';

type Teardown = () => Promise<void>;

const SETUPS: ReadonlyArray<() => Promise<Teardown>> = [setupPostgres, setupBinary];

export default async function globalSetup(): Promise<Teardown> {
  const teardowns: Teardown[] = [];
  const teardown = async () => {
    const errors: unknown[] = [];
    for (const t of teardowns.reverse()) await t().catch((e: unknown) => errors.push(e));
    teardowns.length = 0;
    if (errors.length) throw new AggregateError(errors, 'global teardown failed');
  };
  try {
    for (const setup of SETUPS) teardowns.push(await setup());
  } catch (err) {
    await teardown().catch(() => {}); // don't leave already-started services behind
    throw err;
  }
  return teardown;
}
