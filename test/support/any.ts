/** Test-only: treat parsed JSON bodies as any, so assertions can dig into them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const asAny = (x: unknown): any => x;
