/** Source positions: CEL offsets are UTF-16 code-unit offsets into the expression; lines and columns are 1-based. */
export interface SourcePosition {
  line: number;
  column: number;
}

export function positionAt(source: string, offset: number): SourcePosition {
  const clamped = Math.max(0, Math.min(offset, source.length));
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < clamped; i++) {
    if (source.charCodeAt(i) === 10 /* \n */) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: clamped - lineStart + 1 };
}

/** Offset of the first non-whitespace character at or after `offset` (or the end). */
export function skipWhitespace(source: string, offset: number): number {
  let i = offset;
  while (i < source.length && /\s/.test(source.charAt(i))) i++;
  return i;
}

/** The parser positions members and methods at their `.`; this is the offset of the name after it. */
export function memberNameOffset(source: string, offset: number): number {
  return source.charAt(offset) === '.' ? skipWhitespace(source, offset + 1) : offset;
}
