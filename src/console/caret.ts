/**
 * The CEL editor's error marker: the expression's line an error points at and a line with a caret under its
 * column. Pure (unit-tested in test/console/caret.test.ts).
 */
export interface CaretMarker {
  /** The 1-based line number shown. */
  line: number;
  text: string;
  /** Spaces, then `^` under the 1-based column (tabs kept, so the caret lines up in a monospace block). */
  marker: string;
}

/** Null when the position is unknown or outside the expression. */
export function caretMarker(expression: string, line: number | null | undefined, column: number | null | undefined): CaretMarker | null {
  if (!line || !column || line < 1 || column < 1) return null;
  const lines = expression.split('\n');
  const text = lines[line - 1];
  if (text === undefined) return null;
  // a column one past the end points at the end of the line (an unexpected end of input)
  const col = Math.min(column, text.length + 1);
  const pad = Array.from(text.slice(0, col - 1), (ch) => (ch === '\t' ? '\t' : ' ')).join('');
  return { line, text, marker: `${pad}^` };
}
