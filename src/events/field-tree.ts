/**
 * A field tree describes which `data.<path>` references an event shape allows. It is derived from the
 * JSON Schemas (schemas.ts), never written by hand, so CEL validation and event validation share one source.
 */

export type FieldNode =
  | { readonly kind: 'object'; readonly fields: ReadonlyMap<string, FieldNode> }
  /** `maxItems` / `maxLength`: the schema's size limits, which bound the worst-case cost of CEL filters. */
  | { readonly kind: 'array'; readonly items: FieldNode; readonly maxItems?: number }
  | { readonly kind: 'string'; readonly maxLength?: number }
  | { readonly kind: 'integer' | 'number' | 'boolean' };

export type ObjectFieldNode = Extract<FieldNode, { kind: 'object' }>;

/** The subset of JSON Schema the event schemas use. */
interface SchemaLike {
  type?: unknown;
  properties?: Record<string, unknown>;
  items?: unknown;
  maxItems?: unknown;
  maxLength?: unknown;
}

const limit = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined);

/** Converts a JSON Schema (objects, arrays, scalars) into a field tree. Object property maps are closed. */
export function fieldTreeFromSchema(schema: unknown): FieldNode {
  const s = schema as SchemaLike;
  switch (s.type) {
    case 'object': {
      const fields = new Map<string, FieldNode>();
      for (const [name, sub] of Object.entries(s.properties ?? {})) fields.set(name, fieldTreeFromSchema(sub));
      return { kind: 'object', fields };
    }
    case 'array': {
      const maxItems = limit(s.maxItems);
      return maxItems === undefined
        ? { kind: 'array', items: fieldTreeFromSchema(s.items) }
        : { kind: 'array', items: fieldTreeFromSchema(s.items), maxItems };
    }
    case 'string': {
      const maxLength = limit(s.maxLength);
      return maxLength === undefined ? { kind: 'string' } : { kind: 'string', maxLength };
    }
    case 'integer':
    case 'number':
    case 'boolean':
      return { kind: s.type };
    default:
      throw new Error(`field tree: unsupported schema type ${JSON.stringify(s.type)}`);
  }
}

/** Union of two trees: an object allows every field either side allows. Conflicting kinds are a schema bug. */
export function mergeFieldTrees(a: FieldNode, b: FieldNode, path = 'data'): FieldNode {
  if (a.kind === 'object' && b.kind === 'object') {
    const fields = new Map(a.fields);
    for (const [name, node] of b.fields) {
      const existing = fields.get(name);
      fields.set(name, existing ? mergeFieldTrees(existing, node, `${path}.${name}`) : node);
    }
    return { kind: 'object', fields };
  }
  if (a.kind === 'array' && b.kind === 'array') {
    const items = mergeFieldTrees(a.items, b.items, `${path}[]`);
    const maxItems = looser(a.maxItems, b.maxItems);
    return maxItems === undefined ? { kind: 'array', items } : { kind: 'array', items, maxItems };
  }
  if (a.kind !== b.kind) throw new Error(`field tree: ${path} is ${a.kind} in one schema and ${b.kind} in another`);
  if (a.kind === 'string' && b.kind === 'string') {
    const maxLength = looser(a.maxLength, b.maxLength);
    return maxLength === undefined ? { kind: 'string' } : { kind: 'string', maxLength };
  }
  return a;
}

/** The looser of two limits (the union of two schemas allows the larger; no limit on either side wins). */
function looser(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : Math.max(a, b);
}

/** Every path a tree allows, in CEL notation relative to `data` (e.g. `subject.commonName`, `SANs['DNS Names'][]`). */
export function fieldPaths(node: FieldNode, prefix = ''): string[] {
  const self = prefix ? [prefix] : [];
  if (node.kind === 'object') {
    return [...self, ...[...node.fields].flatMap(([name, sub]) => fieldPaths(sub, joinFieldPath(prefix, name)))];
  }
  if (node.kind === 'array') return [...self, ...fieldPaths(node.items, `${prefix}[]`)];
  return self;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Appends a field name to a path, using `['...']` for names that are not CEL identifiers. */
export function joinFieldPath(prefix: string, name: string): string {
  if (IDENT.test(name)) return prefix ? `${prefix}.${name}` : name;
  return `${prefix}['${name.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}']`;
}
