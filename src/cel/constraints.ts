/**
 * Necessary conditions of a filter, read from its AST, for the routing prefilter index (src/routing/index-*.ts).
 *
 * A constraint is only ever a consequence of the filter being exactly `true`, and every constraint is
 * "decisive": when the event violates it (with a value of the expected shape, see DataConstraint), the
 * filter evaluates to exactly `false`, never to an error. So skipping a router whose constraint the event
 * violates changes neither the matches nor the evaluation errors a brute-force pass would report.
 *
 * Recognised (anywhere under `&&`/`||`/`!`, outside comprehensions; anything else contributes nothing):
 * - `data.<path> == <string or number literal>` (either side), `data.<path> in [<literals>]`
 * - `<string or number literal> in data.<path>` (list membership)
 * - `data.<path>.contains('lit')`, `.startsWith('lit')`, `.endsWith('lit')`, and `.matches('^lit…')` as the
 *   prefix `lit` (see regexLiteralPrefix): each is exactly false for a string field without the literal there
 * - pure `type` predicates: `type == '..'`, `type != '..'`, `type in [..]`, `type.endsWith/startsWith/contains('..')`
 *   and their `&&`, `||`, `!` combinations, evaluated at compile time for each concrete type of the family.
 * Composition: `a && b` keeps the constraints of both sides (equalities on the same path are intersected; of
 * two substring/prefix/suffix constraints of one kind on one path, the more selective); `a || b` keeps only
 * what both sides constrain, as the union of their values; `!a` only for pure type predicates.
 */
import type { EventType } from '../events/families.js';
import type { FieldNode, ObjectFieldNode } from '../events/field-tree.js';
import type { Node } from './ast.js';

export type ConstraintValue = string | number;

/** Constraints on where literals occur in a string field. */
export type StringKind = 'substring' | 'prefix' | 'suffix';

export interface DataConstraint {
  /** Field names below `data`, e.g. `['subject', 'commonName']` or `['SANs', 'DNS Names']`. */
  path: readonly string[];
  /**
   * `equals`: the field's value is one of `values`. `contains`: the field is a list with an element in `values`.
   * `substring` / `prefix` / `suffix` (valueType string): the field is a string containing / starting with /
   * ending with one of `values` (UTF-16 code units, as String.prototype.includes/startsWith/endsWith).
   * Decisive only when the event's field is present and is a `valueType` (a list of them for `contains`);
   * a missing field or a value of another shape tells nothing (evaluate the filter).
   */
  kind: 'equals' | 'contains' | StringKind;
  valueType: 'string' | 'number';
  /** All of `valueType`; numbers are finite, safe integers when they came from int literals. */
  values: ReadonlySet<ConstraintValue>;
}

export interface FilterConstraints {
  /** The concrete types for which the filter can be true (a subset of the family's); undefined: no constraint. */
  types: ReadonlySet<EventType> | undefined;
  /** Each one is necessary and decisive (see the module comment). */
  data: readonly DataConstraint[];
}

/** What an expression implies when it evaluates to true. */
interface Info {
  types: Set<EventType> | undefined;
  /** The expression only reads `type` (and literals): `types` is exactly the set of types making it true, and it never errors. */
  exact: boolean;
  /** By `kind|valueType|path`. */
  data: Map<string, DataConstraint>;
}

const NOTHING = (): Info => ({ types: undefined, exact: false, data: new Map() });

/**
 * Necessary conditions of an expression tree (the root of a compiled filter) for a family's concrete types.
 * With the family's field tree, list memberships are only kept for fields that are lists.
 */
export function extractConstraints(root: Node, familyTypes: readonly EventType[], dataTree?: ObjectFieldNode): FilterConstraints {
  const info = new Extractor(familyTypes, dataTree).analyze(root);
  return { types: info.types, data: [...info.data.values()] };
}

class Extractor {
  constructor(
    private readonly familyTypes: readonly EventType[],
    private readonly dataTree: ObjectFieldNode | undefined,
  ) {}

  analyze(node: Node): Info {
    if (node.kind === 'literal' && node.literal.type === 'bool') {
      return this.exactTypes(() => (node.literal as { value: boolean }).value);
    }
    if (node.kind !== 'call' || node.macro) return NOTHING();
    const [a, b] = node.args;
    if (node.target === undefined) {
      switch (node.fn) {
        case '_&&_':
          return node.args.map((n) => this.analyze(n)).reduce((x, y) => this.and(x, y));
        case '_||_':
          return node.args.map((n) => this.analyze(n)).reduce((x, y) => this.or(x, y));
        case '!_':
          return a && node.args.length === 1 ? this.not(this.analyze(a)) : NOTHING();
        case '_==_':
        case '_!=_':
          return a && b && node.args.length === 2 ? this.comparison(node.fn === '_==_', a, b) : NOTHING();
        case '@in':
          return a && b && node.args.length === 2 ? this.membership(a, b) : NOTHING();
        default:
          return NOTHING();
      }
    }
    const arg = a && node.args.length === 1 ? stringLiteral(a) : undefined;
    if (arg === undefined) return NOTHING();
    // type.endsWith('...') and friends: evaluated for each concrete type.
    if (isTypeIdent(node.target)) {
      switch (node.fn) {
        case 'endsWith':
          return this.exactTypes((t) => t.endsWith(arg));
        case 'startsWith':
          return this.exactTypes((t) => t.startsWith(arg));
        case 'contains':
          return this.exactTypes((t) => t.includes(arg));
      }
      return NOTHING();
    }
    // On a string these are false (never an error) without the literal; on anything else the index evaluates.
    const path = dataPath(node.target);
    if (!path) return NOTHING();
    const kind = STRING_KINDS[node.fn];
    const literal = node.fn === 'matches' ? regexLiteralPrefix(arg) : arg;
    const fnKind = node.fn === 'matches' ? 'prefix' : kind;
    if (!fnKind || literal === undefined) return NOTHING();
    return this.dataInfo({ path, kind: fnKind, valueType: 'string', values: new Set([literal]) });
  }

  private comparison(equal: boolean, a: Node, b: Node): Info {
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const) {
      if (isTypeIdent(x)) {
        const lit = stringLiteral(y);
        return lit === undefined ? NOTHING() : this.exactTypes((t) => (t === lit) === equal);
      }
      if (!equal) continue;
      const path = dataPath(x);
      const value = path && scalarLiteral(y);
      if (path && value) return this.dataInfo({ path, kind: 'equals', valueType: value.type, values: new Set([value.value]) });
    }
    return NOTHING();
  }

  /** `x in container`. */
  private membership(elem: Node, container: Node): Info {
    if (container.kind === 'list') {
      const lits = container.elements.map(scalarLiteral);
      if (isTypeIdent(elem)) {
        if (!lits.every((l) => l?.type === 'string')) return NOTHING();
        const values = new Set(lits.map((l) => l?.value));
        return this.exactTypes((t) => values.has(t));
      }
      const path = dataPath(elem);
      const first = lits[0];
      if (!path || !first || !lits.every((l) => l?.type === first.type)) return NOTHING();
      return this.dataInfo({ path, kind: 'equals', valueType: first.type, values: new Set(lits.map((l) => l?.value ?? first.value)) });
    }
    const path = dataPath(container);
    const value = path && this.isListField(path) && scalarLiteral(elem);
    if (path && value) return this.dataInfo({ path, kind: 'contains', valueType: value.type, values: new Set([value.value]) });
    return NOTHING();
  }

  private isListField(path: readonly string[]): boolean {
    let node: FieldNode | undefined = this.dataTree;
    if (!node) return true;
    for (const name of path) node = node?.kind === 'object' ? node.fields.get(name) : undefined;
    return node?.kind === 'array';
  }

  private exactTypes(pred: (t: EventType) => boolean): Info {
    return { types: new Set(this.familyTypes.filter(pred)), exact: true, data: new Map() };
  }

  private dataInfo(c: DataConstraint): Info {
    return { types: undefined, exact: false, data: new Map([[keyOf(c), c]]) };
  }

  private and(x: Info, y: Info): Info {
    const data = new Map(x.data);
    for (const [k, c] of y.data) {
      const prev = data.get(k);
      if (!prev) data.set(k, c);
      // Both equalities hold: the value is in both sets. (Two `contains` are both true, but "contains one of
      // the intersection" is not implied; keep the first. Same for the string kinds: keep the more selective.)
      else if (c.kind === 'equals') data.set(k, { ...c, values: new Set([...prev.values].filter((v) => c.values.has(v))) });
      else if (c.kind !== 'contains' && literalSelectivity(c) > literalSelectivity(prev)) data.set(k, c);
    }
    const types = x.types && y.types ? new Set([...x.types].filter((t) => y.types?.has(t))) : (x.types ?? y.types);
    return { types: types && new Set(types), exact: x.exact && y.exact, data };
  }

  private or(x: Info, y: Info): Info {
    const data = new Map<string, DataConstraint>();
    for (const [k, c] of x.data) {
      const other = y.data.get(k);
      if (other) data.set(k, { ...c, values: new Set([...c.values, ...other.values]) });
    }
    // Different string predicates on one path (`startsWith('a') || endsWith('b')`, `== 'a' || contains('b')`):
    // each implies its literal occurs in the string, so the string contains one of them.
    for (const [path, cx] of bestStringConstraints(x)) {
      const cy = bestStringConstraints(y).get(path);
      const k = `substring|string|${path}`;
      if (!cy || data.has(k) || [...data.values()].some((c) => c.valueType === 'string' && JSON.stringify(c.path) === path)) continue;
      data.set(k, { path: cx.path, kind: 'substring', valueType: 'string', values: new Set([...cx.values, ...cy.values]) });
    }
    const types = x.types && y.types ? new Set([...x.types, ...y.types]) : undefined;
    return { types, exact: x.exact && y.exact, data };
  }

  private not(x: Info): Info {
    if (!x.exact || !x.types) return NOTHING();
    const inner = x.types;
    return { types: new Set(this.familyTypes.filter((t) => !inner.has(t))), exact: true, data: new Map() };
  }
}

/** By JSON path: the most selective string equality, substring, prefix or suffix constraint of `info` on it. */
function bestStringConstraints(info: Info): Map<string, DataConstraint> {
  const best = new Map<string, DataConstraint>();
  for (const c of info.data.values()) {
    if (c.valueType !== 'string' || c.kind === 'contains') continue;
    const path = JSON.stringify(c.path);
    const prev = best.get(path);
    if (!prev || literalSelectivity(c) > literalSelectivity(prev)) best.set(path, c);
  }
  return best;
}

const STRING_KINDS: Partial<Record<string, StringKind>> = { contains: 'substring', startsWith: 'prefix', endsWith: 'suffix' };

/**
 * How selective a set of literals is (higher: fewer strings have one): fewer literals first, then a longer
 * shortest literal (a short literal occurs in many strings; the empty one in all). Used to choose between
 * constraints here and in the routing index.
 */
export function literalSelectivity(c: DataConstraint): number {
  let shortest = Infinity;
  for (const v of c.values) shortest = Math.min(shortest, String(v).length);
  return -c.values.size * 1_000_000 + Math.min(shortest, 999_999);
}

/**
 * The literal every match of an RE2 pattern starts with when the pattern is anchored (`^abc…`): the plain
 * ASCII characters (or `\`-escaped punctuation) after `^`, up to the first other token. Unless that token is
 * `$` or the end, the last character is left out: a quantifier may follow it, also after tokens that add
 * nothing (`^ab?`, `^ab(?i)?`, `^ab\Q\E*`). Undefined when the pattern is not anchored that way, has a
 * top-level `|`, or the prefix is empty. Anything unusual (flags, classes, groups, non-ASCII) ends the prefix.
 */
export function regexLiteralPrefix(pattern: string): string | undefined {
  if (!pattern.startsWith('^') || hasTopLevelAlternation(pattern)) return undefined;
  let prefix = '';
  let i = 1;
  while (i < pattern.length) {
    const ch = pattern[i] as string;
    if (ch === '\\') {
      const next = pattern[i + 1];
      if (next === undefined || !/^[!-/:-@[-`{-~]$/.test(next)) break; // \d, \Q, \x41, \pL ...: stop
      prefix += next;
      i += 2;
    } else if (/^[ -~]$/.test(ch) && !'.+*?()[]{}|^$'.includes(ch)) {
      prefix += ch;
      i += 1;
    } else break;
  }
  if (i < pattern.length && pattern[i] !== '$') prefix = prefix.slice(0, -1);
  return prefix === '' ? undefined : prefix;
}

/** A `|` outside groups and classes (then a `^` at the start anchors only the first alternative); conservative: unbalanced counts as yes. */
function hasTopLevelAlternation(pattern: string): boolean {
  let depth = 0;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') i++;
    else if (ch === '[') {
      // A class: `]` right after `[` or `[^` is a member; `[:alpha:]` inside is a named class.
      i++;
      if (pattern[i] === '^') i++;
      if (pattern[i] === ']') i++;
      for (; i < pattern.length && pattern[i] !== ']'; i++) {
        if (pattern[i] === '\\') i++;
        else if (pattern.startsWith('[:', i)) {
          const end = pattern.indexOf(':]', i + 2);
          if (end < 0) return true;
          i = end + 1;
        }
      }
      if (i >= pattern.length) return true;
    } else if (ch === '(') depth++;
    else if (ch === ')') {
      if (--depth < 0) return true;
    } else if (ch === '|' && depth === 0) return true;
  }
  return depth !== 0;
}

function keyOf(c: DataConstraint): string {
  return `${c.kind}|${c.valueType}|${JSON.stringify(c.path)}`;
}

function isTypeIdent(n: Node): boolean {
  return n.kind === 'ident' && n.name === 'type';
}

function stringLiteral(n: Node): string | undefined {
  return n.kind === 'literal' && n.literal.type === 'string' ? n.literal.value : undefined;
}

/** String literals, finite doubles and ints/uints that a JS number represents exactly. */
function scalarLiteral(n: Node): { type: 'string'; value: string } | { type: 'number'; value: number } | undefined {
  if (n.kind !== 'literal') return undefined;
  const l = n.literal;
  switch (l.type) {
    case 'string':
      return { type: 'string', value: l.value };
    case 'double':
      return Number.isFinite(l.value) ? { type: 'number', value: l.value } : undefined;
    case 'int':
    case 'uint': {
      const v = Number(l.value);
      return Number.isSafeInteger(v) ? { type: 'number', value: v } : undefined;
    }
    default:
      return undefined;
  }
}

/** `data.a.b` or `data['a']['b']` (string-literal keys): the field names, or undefined. */
function dataPath(n: Node): string[] | undefined {
  const path: string[] = [];
  let cur = n;
  for (;;) {
    if (cur.kind === 'select') {
      path.push(cur.field);
      cur = cur.operand;
    } else if (cur.kind === 'call' && cur.fn === '_[_]' && !cur.macro && cur.target === undefined && cur.args.length === 2) {
      const [operand, key] = cur.args;
      const name = key && stringLiteral(key);
      if (!operand || name === undefined) return undefined;
      path.push(name);
      cur = operand;
    } else break;
  }
  if (cur.kind !== 'ident' || cur.name !== 'data' || path.length === 0) return undefined;
  return path.reverse();
}
