/** GraphQL assertions shared by the API tests (vitest only: bench scripts import test/support/service.ts, not this). */
import { ClientError } from 'graphql-request';
import { expect } from 'vitest';

/** Awaits a GraphQL request that must fail and returns its first error (message and extensions). */
export async function gqlError(p: Promise<unknown>): Promise<{ message: string; extensions: Record<string, unknown> }> {
  const e = await p.then(
    () => {
      throw new Error('expected a GraphQL error');
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ClientError);
  const errs = (e as ClientError).response.errors;
  expect(errs?.length).toBeGreaterThan(0);
  return errs![0] as never;
}
