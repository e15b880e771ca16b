/**
 * The small static type system the filter checker uses. It is deliberately coarse: anything it cannot know is
 * `dyn` and passes every check; only definite mistakes are rejected. JSON numbers are CEL doubles at run time,
 * so integer schema fields are typed `double` here.
 */
import type { FieldNode, ObjectFieldNode } from '../events/field-tree.js';

export type ScalarKind = 'bool' | 'int' | 'uint' | 'double' | 'string' | 'bytes' | 'null' | 'timestamp' | 'duration' | 'type';

export type StaticType =
  | { readonly kind: ScalarKind | 'dyn' | 'map' }
  | { readonly kind: 'list'; readonly elem: StaticType }
  /** An object from the event schema; `path` is relative to `data` ('' for `data` itself). */
  | { readonly kind: 'object'; readonly path: string; readonly node: ObjectFieldNode };

export type Kind = StaticType['kind'];

export const T = {
  bool: { kind: 'bool' },
  int: { kind: 'int' },
  uint: { kind: 'uint' },
  double: { kind: 'double' },
  string: { kind: 'string' },
  bytes: { kind: 'bytes' },
  null: { kind: 'null' },
  timestamp: { kind: 'timestamp' },
  duration: { kind: 'duration' },
  type: { kind: 'type' },
  dyn: { kind: 'dyn' },
  map: { kind: 'map' },
} as const satisfies Record<string, StaticType>;

export function listOf(elem: StaticType): StaticType {
  return { kind: 'list', elem };
}

/** The CEL type of a schema field's value. */
export function fromField(node: FieldNode, path: string): StaticType {
  switch (node.kind) {
    case 'object':
      return { kind: 'object', path, node };
    case 'array':
      return listOf(fromField(node.items, `${path}[]`));
    case 'string':
      return T.string;
    case 'integer':
    case 'number':
      return T.double;
    case 'boolean':
      return T.bool;
  }
}

/** Whether a value of type t may be one of the kinds (dyn may be anything). */
export function accepts(kinds: readonly Kind[], t: StaticType): boolean {
  return t.kind === 'dyn' || kinds.includes(t.kind);
}

/** The common type of two branches, or dyn. */
export function join(a: StaticType, b: StaticType): StaticType {
  if (a.kind === b.kind && a.kind !== 'list' && a.kind !== 'object') return a;
  if (a.kind === 'list' && b.kind === 'list') return listOf(join(a.elem, b.elem));
  return T.dyn;
}

export function describeType(t: StaticType): string {
  switch (t.kind) {
    case 'list':
      return `list of ${describeType(t.elem)}`;
    case 'object':
      return t.path ? `object (data.${t.path})` : 'object (data)';
    case 'type':
      return 'type value';
    default:
      return t.kind;
  }
}
