/**
 * Cooperative time slicing for CPU-bound loops (routing a batch of events, simulating routing): after a slice
 * of `sliceMs` the loop awaits setImmediate, so I/O (other tenants' requests, /healthz, delivery claims) runs
 * before the next slice. One filter evaluation is never split: its cost is bounded by the evaluation budget
 * (src/cel/filter.ts), so the longest hold is one slice plus one evaluation.
 */
const SLICE_MS = 2;

export class TimeSlicer {
  private start: number;

  constructor(
    private readonly sliceMs = SLICE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.start = now();
  }

  /** Whether the current slice is used up (cheap: call it after every unit of work). */
  due(): boolean {
    return this.now() - this.start >= this.sliceMs;
  }

  /** Lets the event loop run, then starts a new slice. */
  async yield(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.start = this.now();
  }
}

/** Runs `steps` to the end, yielding to the event loop between two steps when the slice is used up. */
export async function runSliced<T>(steps: Generator<void, T, void>, slicer: Pick<TimeSlicer, 'due' | 'yield'>): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (slicer.due()) await slicer.yield();
  }
}
