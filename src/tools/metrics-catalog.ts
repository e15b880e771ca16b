/**
 * The Prometheus metrics the code registers, read from the source: every
 * `new Counter | Gauge | Histogram | Summary({ name, help, labelNames })` under src/, its name and help resolved
 * through module constants (`LOG_SUPPRESSED_METRIC`, `DELIVERY_METRICS.deliveries`). Syntax only (no type check),
 * so it is fast enough for a drift test. Feeds the generated metrics list of docs/observability.md.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export interface MetricDoc {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary';
  help: string;
  labels: string[];
  /** repo-relative file that registers it */
  file: string;
}

const KINDS = { Counter: 'counter', Gauge: 'gauge', Histogram: 'histogram', Summary: 'summary' } as const;

function sourceFiles(root: string): ts.SourceFile[] {
  const dir = join(root, 'src');
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('console'))
    .map((f) => ts.createSourceFile(join(dir, f), readFileSync(join(dir, f), 'utf8'), ts.ScriptTarget.ES2022, true));
}

/** Top-level `const X = 'text' | 3` and `const X = { k: 'text' }` (also `as const`) of every file: `X` and `X.k`. */
function moduleConstants(files: ts.SourceFile[]): Map<string, string> {
  const out = new Map<string, string>();
  const unwrap = (e: ts.Expression): ts.Expression => (ts.isAsExpression(e) || ts.isSatisfiesExpression(e) ? unwrap(e.expression) : e);
  for (const sf of files)
    for (const st of sf.statements) {
      if (!ts.isVariableStatement(st)) continue;
      for (const d of st.declarationList.declarations) {
        if (!ts.isIdentifier(d.name) || !d.initializer) continue;
        const init = unwrap(d.initializer);
        if (ts.isStringLiteralLike(init) || ts.isNumericLiteral(init)) out.set(d.name.text, init.text);
        else if (ts.isObjectLiteralExpression(init))
          for (const p of init.properties)
            if (ts.isPropertyAssignment(p) && ts.isStringLiteralLike(unwrap(p.initializer)))
              out.set(`${d.name.text}.${p.name.getText(sf)}`, (unwrap(p.initializer) as ts.StringLiteralLike).text);
      }
    }
  return out;
}

/** Every metric registered under `<root>/src`, sorted by name; a name registered twice is listed once. */
export function metricsCatalog(root: string): MetricDoc[] {
  const files = sourceFiles(root);
  const consts = moduleConstants(files);
  const out = new Map<string, MetricDoc>();
  for (const sf of files) {
    const text = (e: ts.Expression, where: string): string => {
      if (ts.isStringLiteralLike(e)) return e.text;
      if (ts.isTemplateExpression(e))
        return e.head.text + e.templateSpans.map((span) => text(span.expression, where) + span.literal.text).join('');
      const v = consts.get(e.getText(sf));
      if (v === undefined) throw new Error(`${where}: ${e.getText(sf)} is not a constant string (the metrics reference cannot name it)`);
      return v;
    };
    const visit = (n: ts.Node): void => {
      if (ts.isNewExpression(n)) {
        const callee = ts.isPropertyAccessExpression(n.expression) ? n.expression.name.text : n.expression.getText(sf);
        const arg = n.arguments?.[0];
        if (callee in KINDS && arg && ts.isObjectLiteralExpression(arg)) {
          const where = `${relative(root, sf.fileName)}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}`;
          const prop = (key: string) =>
            arg.properties.find((p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(sf) === key)?.initializer;
          const name = prop('name');
          const help = prop('help');
          if (name && help) {
            const labels = prop('labelNames');
            const doc: MetricDoc = {
              name: text(name, where),
              type: KINDS[callee as keyof typeof KINDS],
              help: text(help, where),
              labels: labels && ts.isArrayLiteralExpression(labels) ? labels.elements.map((l) => text(l, where)) : [],
              file: relative(root, sf.fileName),
            };
            if (!out.has(doc.name)) out.set(doc.name, doc);
          }
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return [...out.values()].sort((a, b) => a.name.localeCompare(b.name));
}
