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

/** Above this many children a node looks its children up in a Map, below it walks their list. */
const WIDE = 8;

/**
 * A trie over UTF-16 code units; node 0 is the root. Compact: most nodes of long literals have one child, so
 * children are a sibling list in typed arrays (about 20 bytes a node), and only nodes with many children get a
 * Map, which keeps every step O(1) whatever the alphabet.
 */
class Trie {
  /** Code unit on the edge into each node; first child; next sibling (-1: none). */
  edge: Int32Array;
  firstChild: Int32Array;
  nextSibling: Int32Array;
  /** The literal (index) that ends at each node, or -1. */
  literal: Int32Array;
  readonly wide = new Map<number, Map<number, number>>();
  size = 1;

  constructor(literals: readonly string[], reversed: boolean) {
    const capacity = 1 + literals.reduce((n, s) => n + s.length, 0);
    this.edge = new Int32Array(capacity);
    this.firstChild = new Int32Array(capacity).fill(-1);
    this.nextSibling = new Int32Array(capacity).fill(-1);
    this.literal = new Int32Array(capacity).fill(-1);
    const childCount = new Int32Array(capacity);
    literals.forEach((s, id) => {
      let node = 0;
      for (let k = 0; k < s.length; k++) {
        const c = s.charCodeAt(reversed ? s.length - 1 - k : k);
        let child = this.child(node, c);
        if (child < 0) {
          child = this.size++;
          this.edge[child] = c;
          this.nextSibling[child] = this.firstChild[node] as number;
          this.firstChild[node] = child;
          const n = ++(childCount[node] as number);
          const map = this.wide.get(node);
          if (map) map.set(c, child);
          else if (n > WIDE) {
            const m = new Map<number, number>();
            for (let v = child; v >= 0; v = this.nextSibling[v] as number) m.set(this.edge[v] as number, v);
            this.wide.set(node, m);
          }
        }
        node = child;
      }
      if (this.literal[node] !== -1) throw new RangeError(`duplicate literal ${JSON.stringify(s)}`);
      this.literal[node] = id;
    });
  }

  /** The child of `node` along code unit `c`, or -1. */
  child(node: number, c: number): number {
    const map = this.wide.get(node);
    if (map) return map.get(c) ?? -1;
    for (let v = this.firstChild[node] as number; v >= 0; v = this.nextSibling[v] as number) if (this.edge[v] === c) return v;
    return -1;
  }
}

/** Reports each literal (its index in the constructor's array, literals distinct) that occurs in a string. */
export class SubstringMatcher {
  private readonly trie: Trie;
  /** Aho–Corasick failure link: the node of the longest proper suffix of this node's path that is in the trie. */
  private readonly fail: Int32Array;
  /** The nearest node along the failure links (excluding this one and the root) where a literal ends, or 0. */
  private readonly dict: Int32Array;
  /** `seen[node] === epoch`: the node's literal was reported by the current scan (each literal once). */
  private readonly seen: Uint32Array;
  private epoch = 0;

  constructor(literals: readonly string[]) {
    const trie = (this.trie = new Trie(literals, false));
    const n = trie.size;
    this.fail = new Int32Array(n);
    this.dict = new Int32Array(n);
    this.seen = new Uint32Array(n);
    // Breadth first: a node's failure target is shallower, so it is complete when the node is reached.
    const queue = new Int32Array(n);
    let tail = 0;
    for (let v = trie.firstChild[0] as number; v >= 0; v = trie.nextSibling[v] as number) queue[tail++] = v;
    for (let head = 0; head < tail; head++) {
      const u = queue[head] as number;
      for (let v = trie.firstChild[u] as number; v >= 0; v = trie.nextSibling[v] as number) {
        const c = trie.edge[v] as number;
        let f = this.fail[u] as number;
        let target = trie.child(f, c);
        while (target < 0 && f !== 0) {
          f = this.fail[f] as number;
          target = trie.child(f, c);
        }
        const fv = target < 0 ? 0 : target;
        this.fail[v] = fv;
        this.dict[v] = fv !== 0 && (trie.literal[fv] as number) >= 0 ? fv : (this.dict[fv] as number);
        queue[tail++] = v;
      }
    }
  }

  /** Calls `found` once for each literal occurring in `s` (in no particular order). */
  forEachIn(s: string, found: (literal: number) => void): void {
    const { trie, fail, dict, seen } = this;
    const literal = trie.literal;
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
      let to = trie.child(state, c);
      while (to < 0 && state !== 0) {
        state = fail[state] as number;
        to = trie.child(state, c);
      }
      state = to < 0 ? 0 : to;
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
    const trie = this.trie;
    const suffix = this.end === 'suffix';
    let node = 0;
    for (let k = 0; ; k++) {
      const id = trie.literal[node] as number;
      if (id >= 0) found(id);
      if (k === s.length) return;
      node = trie.child(node, s.charCodeAt(suffix ? s.length - 1 - k : k));
      if (node < 0) return;
    }
  }
}
