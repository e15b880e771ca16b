/**
 * The expression as the user wrote it, rebuilt from @bufbuild/cel's parsed AST. The parser expands macros
 * (`has`, `exists`, `map`, ...) into comprehensions and keeps the original calls in `sourceInfo.macroCalls`;
 * we put those calls back so the checker sees `x.exists(n, p)` instead of loop internals.
 */
import type { parse } from '@bufbuild/cel';
import { FilterCompileError } from './errors.js';

type ParsedExpr = ReturnType<typeof parse>;
type Expr = ParsedExpr['expr'];

export type Literal =
  | { type: 'bool'; value: boolean }
  | { type: 'int' | 'uint'; value: bigint }
  | { type: 'double'; value: number }
  | { type: 'string'; value: string }
  | { type: 'bytes'; value: Uint8Array }
  | { type: 'null' };

interface NodeBase {
  id: bigint;
  /** UTF-16 offset the parser recorded: the start of a name or literal, the `.` of a member, or the operator. */
  offset: number;
}

export type Node = NodeBase &
  (
    | { kind: 'literal'; literal: Literal }
    | { kind: 'ident'; name: string }
    | { kind: 'select'; operand: Node; field: string }
    /** `macro` is true for has/all/exists/exists_one/filter/map as the parser expanded them. */
    | { kind: 'call'; fn: string; target: Node | undefined; args: Node[]; macro: boolean }
    | { kind: 'list'; elements: Node[] }
    | { kind: 'map'; entries: { key: Node; value: Node }[] }
    | { kind: 'message'; name: string }
  );

export interface SourceTree {
  root: Node;
  /** Number of nodes, macro calls counted once. */
  size: number;
  /** Every node by id (evaluation errors carry the id of the failing node). */
  nodes: ReadonlyMap<bigint, Node>;
  /** Offsets of every id in the parser's output, including ids inside macro expansions. */
  offsets: ReadonlyMap<bigint, number>;
}

export function toSourceTree(parsed: ParsedExpr, source: string): SourceTree {
  const info = parsed.sourceInfo;
  const positions = info?.positions ?? {};
  const macroCalls = info?.macroCalls ?? {};
  const nodes = new Map<bigint, Node>();
  const offsetOf = (id: bigint): number => positions[id.toString()] ?? 0;
  const unsupported = (id: bigint, what: string): never => {
    throw FilterCompileError.at(source, offsetOf(id), `${what} is not supported in filters`);
  };

  const convert = (e: Expr): Node => {
    const base = { id: e.id, offset: offsetOf(e.id) };
    let node: Node;
    const macro = macroCalls[e.id.toString()];
    if (macro?.exprKind.case === 'callExpr') {
      const call = macro.exprKind.value;
      node = {
        ...base,
        kind: 'call',
        fn: call.function,
        target: call.target && convert(call.target),
        args: call.args.map(convert),
        macro: true,
      };
    } else {
      const k = e.exprKind;
      switch (k.case) {
        case 'constExpr':
          node = { ...base, kind: 'literal', literal: toLiteral(k.value.constantKind) ?? unsupported(e.id, 'this literal') };
          break;
        case 'identExpr':
          node = { ...base, kind: 'ident', name: k.value.name };
          break;
        case 'selectExpr':
          if (!k.value.operand || k.value.testOnly) return unsupported(e.id, 'this field test');
          node = { ...base, kind: 'select', operand: convert(k.value.operand), field: k.value.field };
          break;
        case 'callExpr':
          node = {
            ...base,
            kind: 'call',
            fn: k.value.function,
            target: k.value.target && convert(k.value.target),
            args: k.value.args.map(convert),
            macro: false,
          };
          break;
        case 'listExpr':
          if (k.value.optionalIndices.length > 0) return unsupported(e.id, 'an optional list element');
          node = { ...base, kind: 'list', elements: k.value.elements.map(convert) };
          break;
        case 'structExpr':
          if (k.value.messageName) {
            node = { ...base, kind: 'message', name: k.value.messageName };
            break;
          }
          node = {
            ...base,
            kind: 'map',
            entries: k.value.entries.map((entry) => {
              if (entry.keyKind.case !== 'mapKey' || !entry.value) return unsupported(entry.id, 'this map entry');
              return { key: convert(entry.keyKind.value), value: convert(entry.value) };
            }),
          };
          break;
        default:
          return unsupported(e.id, 'this construct');
      }
    }
    nodes.set(node.id, node);
    return node;
  };

  const root = convert(parsed.expr);
  const offsets = new Map(Object.entries(positions).map(([id, offset]) => [BigInt(id), offset] as const));
  return { root, size: nodes.size, nodes, offsets };
}

type ConstantKind = Extract<Expr['exprKind'], { case: 'constExpr' }>['value']['constantKind'];

function toLiteral(c: ConstantKind): Literal | undefined {
  switch (c.case) {
    case 'boolValue':
      return { type: 'bool', value: c.value };
    case 'int64Value':
      return { type: 'int', value: c.value };
    case 'uint64Value':
      return { type: 'uint', value: c.value };
    case 'doubleValue':
      return { type: 'double', value: c.value };
    case 'stringValue':
      return { type: 'string', value: c.value };
    case 'bytesValue':
      return { type: 'bytes', value: c.value };
    case 'nullValue':
      return { type: 'null' };
    default:
      return undefined;
  }
}

/** The direct children of a node, in no particular order. */
export function childrenOf(node: Node): Node[] {
  switch (node.kind) {
    case 'select':
      return [node.operand];
    case 'call':
      return node.target ? [node.target, ...node.args] : node.args;
    case 'list':
      return node.elements;
    case 'map':
      return node.entries.flatMap((e) => [e.key, e.value]);
    default:
      return [];
  }
}

/** Where the source text of a node starts (binary operators and members are positioned after their operands). */
export function startOffset(node: Node): number {
  return childrenOf(node).reduce((min, child) => Math.min(min, startOffset(child)), node.offset);
}
