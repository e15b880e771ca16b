/**
 * Which of many string literals occur in a string (Aho–Corasick), start it, or end it: one pass over the
 * string for all literals, for the routing prefilter's substring buckets (src/routing/index-prefilter.ts).
 *
 * Literals and strings are compared as UTF-16 code units, exactly like String.prototype.includes /
 * startsWith / endsWith, which is what @bufbuild/cel's `contains` / `startsWith` / `endsWith` run. (Packages
 * such as modern-ahocorasick match whole grapheme clusters, so they would miss an `e` inside `é` written with
 * a combining accent where `includes` finds it, and they report every occurrence rather than each literal once.)
 *
 * Each matcher reports each matching literal once per call, so a scan costs O(string length + literals found),
 * whatever the number of literals or of their occurrences. The empty literal matches every string.
 */

/** A trie over UTF-16 code units; node 0 is the root. */
class Trie {
  readonly next: Map<number, number>[] = [new Map()];
  /** The literal (index) that ends at each node, or -1. */
  readonly literal: number[] = [-1];

  constructor(literals: readonly string[], reversed: boolean) {
    literals.forEach((s, id) => {
      let node = 0;
      for (let k = 0; k < s.length; k++) {
        const c = s.charCodeAt(reversed ? s.length - 1 - k : k);
        const edges = this.next[node] as Map<number, number>;
        let child = edges.get(c);
        if (child === undefined) {
          child = this.next.length;
          this.next.push(new Map());
          this.literal.push(-1);
          edges.set(c, child);
        }
        node = child;
      }
      if (this.literal[node] !== -1) throw new RangeError(`duplicate literal ${JSON.stringify(s)}`);
      this.literal[node] = id;
    });
  }
}

/** Reports each literal (its index in the constructor's array, literals distinct) that occurs in a string. */
export class SubstringMatcher {
  private readonly next: Map<number, number>[];
  private readonly literal: number[];
  /** Aho–Corasick failure link: the node of the longest proper suffix of this node's path that is in the trie. */
  private readonly fail: Int32Array;
  /** The nearest node along the failure links (excluding this one and the root) where a literal ends, or 0. */
  private readonly dict: Int32Array;
  /** `seen[node] === epoch`: the node's literal was reported by the current scan (each literal once). */
  private readonly seen: Uint32Array;
  private epoch = 0;

  constructor(literals: readonly string[]) {
    const trie = new Trie(literals, false);
    this.next = trie.next;
    this.literal = trie.literal;
    const n = this.next.length;
    this.fail = new Int32Array(n);
    this.dict = new Int32Array(n);
    this.seen = new Uint32Array(n);
    // Breadth first: a node's failure target is shallower, so it is complete when the node is reached.
    const queue: number[] = [...(this.next[0] as Map<number, number>).values()];
    for (let head = 0; head < queue.length; head++) {
      const u = queue[head] as number;
      for (const [c, v] of this.next[u] as Map<number, number>) {
        let f = this.fail[u] as number;
        let target = (this.next[f] as Map<number, number>).get(c);
        while (target === undefined && f !== 0) {
          f = this.fail[f] as number;
          target = (this.next[f] as Map<number, number>).get(c);
        }
        const fv = target ?? 0;
        this.fail[v] = fv;
        this.dict[v] = fv !== 0 && (this.literal[fv] as number) >= 0 ? fv : (this.dict[fv] as number);
        queue.push(v);
      }
    }
  }

  /** Calls `found` once for each literal occurring in `s` (in no particular order). */
  forEachIn(s: string, found: (literal: number) => void): void {
    const { next, literal, fail, dict, seen } = this;
    if (++this.epoch === 0xffffffff) {
      seen.fill(0);
      this.epoch = 1;
    }
    const epoch = this.epoch;
    const empty = literal[0] as number;
    if (empty >= 0) found(empty);
    let state = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      let to = (next[state] as Map<number, number>).get(c);
      while (to === undefined && state !== 0) {
        state = fail[state] as number;
        to = (next[state] as Map<number, number>).get(c);
      }
      state = to ?? 0;
      // Every literal ending here is on the dictionary chain. A node reported before had its whole chain
      // reported then, so the walk stops there: each literal costs one visit per scan.
      let v = (literal[state] as number) >= 0 ? state : (dict[state] as number);
      while (v !== 0 && seen[v] !== epoch) {
        seen[v] = epoch;
        found(literal[v] as number);
        v = dict[v] as number;
      }
    }
  }
}

/** Reports each literal (index, literals distinct) that a string starts with or, built with `'suffix'`, ends with. */
export class AffixMatcher {
  private readonly trie: Trie;

  constructor(
    literals: readonly string[],
    private readonly end: 'prefix' | 'suffix',
  ) {
    this.trie = new Trie(literals, end === 'suffix');
  }

  /** Calls `found` once for each literal that `s` starts (or ends) with, shortest first; reads at most the longest literal's length of `s`. */
  forEachIn(s: string, found: (literal: number) => void): void {
    const { next, literal } = this.trie;
    const suffix = this.end === 'suffix';
    let node = 0;
    for (let k = 0; ; k++) {
      const id = literal[node] as number;
      if (id >= 0) found(id);
      if (k === s.length) return;
      const to = (next[node] as Map<number, number>).get(s.charCodeAt(suffix ? s.length - 1 - k : k));
      if (to === undefined) return;
      node = to;
    }
  }
}
