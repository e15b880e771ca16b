/** A client-node Watch for informer tests: each watch() call is recorded; the test ends it (done) or pushes events. */
import type { KubernetesObject } from '@kubernetes/client-node';

export type Done = (err?: unknown) => void;
export type Cb = (phase: string, obj: KubernetesObject) => void;

export class ScriptedWatch {
  calls: { query: Record<string, unknown>; cb: Cb; done: Done }[] = [];
  async watch(_path: string, query: Record<string, unknown>, cb: Cb, done: Done): Promise<AbortController> {
    this.calls.push({ query, cb, done });
    return new AbortController();
  }
  get last() {
    return this.calls.at(-1)!;
  }
}
