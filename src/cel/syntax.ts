/**
 * Syntax-error diagnosis. @bufbuild/cel's PEG parser often reports the wrong place (for `type.endsWith(` it
 * blames the `.` at 1:5), so when it rejects an expression we re-read it with this small lexer and
 * recursive-descent recognizer of the CEL grammar to find the first token that cannot continue a valid
 * expression. The recognizer is slightly more permissive than CEL; it is only consulted after the real parser
 * failed, and when it finds nothing the caller falls back to the parser's own position.
 */
import { positionAt } from './position.js';

export interface SyntaxProblem {
  /** UTF-16 offset into the expression. */
  offset: number;
  reason: string;
}

interface Token {
  kind: 'ident' | 'number' | 'string' | 'punct' | 'eof';
  text: string;
  start: number;
}

class Problem extends Error {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** Returns the first syntax problem, or undefined when the recognizer accepts the expression. */
export function findSyntaxProblem(source: string): SyntaxProblem | undefined {
  try {
    new Recognizer(source, tokenize(source)).expression();
    return undefined;
  } catch (e) {
    if (e instanceof Problem) return { offset: e.offset, reason: e.reason };
    if (e instanceof RangeError) return { offset: 0, reason: 'expression is nested too deeply' };
    throw e;
  }
}

/**
 * The first opening bracket nested deeper than the recognizer's limit, if any. Checked before the real parser:
 * otherwise the only bound would be the parser's stack overflow, which moves with the thread's stack size (a
 * worker thread would accept a nesting that the main thread rejects).
 */
export function findDeepNesting(source: string): SyntaxProblem | undefined {
  let tokens: Token[];
  try {
    tokens = tokenize(source);
  } catch (e) {
    if (e instanceof Problem) return undefined; // a lexical error: the parser and findSyntaxProblem report it
    throw e;
  }
  let depth = 0;
  for (const t of tokens) {
    if (t.kind !== 'punct') continue;
    if (t.text === '(' || t.text === '[' || t.text === '{') {
      if (++depth > MAX_DEPTH) return { offset: t.start, reason: 'expression is nested too deeply' };
    } else if (t.text === ')' || t.text === ']' || t.text === '}') {
      depth--;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Lexer

const PUNCT2 = ['==', '!=', '<=', '>=', '&&', '||'];
const PUNCT1 = '<>!+-*/%?:.,()[]{}';
const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_]/;
const DIGIT = /[0-9]/;
const HEX = /[0-9A-Fa-f]/;

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src.charAt(i);
    if (/\s/.test(c)) {
      i++;
    } else if (src.startsWith('//', i)) {
      while (i < src.length && src.charAt(i) !== '\n') i++;
    } else if (stringPrefixLength(src, i) >= 0) {
      const end = scanString(src, i);
      tokens.push({ kind: 'string', text: src.slice(i, end), start: i });
      i = end;
    } else if (DIGIT.test(c) || (c === '.' && DIGIT.test(src.charAt(i + 1)))) {
      const end = scanNumber(src, i);
      tokens.push({ kind: 'number', text: src.slice(i, end), start: i });
      i = end;
    } else if (IDENT_START.test(c)) {
      let end = i + 1;
      while (end < src.length && IDENT_PART.test(src.charAt(end))) end++;
      tokens.push({ kind: 'ident', text: src.slice(i, end), start: i });
      i = end;
    } else {
      const two = src.slice(i, i + 2);
      if (PUNCT2.includes(two)) {
        tokens.push({ kind: 'punct', text: two, start: i });
        i += 2;
      } else if (PUNCT1.includes(c)) {
        tokens.push({ kind: 'punct', text: c, start: i });
        i++;
      } else {
        throw new Problem(i, unexpectedCharacter(c));
      }
    }
  }
  tokens.push({ kind: 'eof', text: '', start: src.length });
  return tokens;
}

function unexpectedCharacter(c: string): string {
  if (c === '=') return "unexpected '=' (use '==' to compare)";
  if (c === '&') return "unexpected '&' (use '&&')";
  if (c === '|') return "unexpected '|' (use '||')";
  return `unexpected character ${JSON.stringify(c)}`;
}

const STRING_PREFIX = /^(?:[rR][bB]?|[bB][rR]?)?(?=["'])/;

/** Length of the string-literal prefix (none, r, b, rb, br in any case) at i when a quote follows, else -1. */
function stringPrefixLength(src: string, i: number): number {
  return STRING_PREFIX.exec(src.slice(i, i + 3))?.[0].length ?? -1;
}

function scanString(src: string, start: number): number {
  const prefix = stringPrefixLength(src, start);
  const raw = /[rR]/.test(src.slice(start, start + prefix));
  let i = start + prefix;
  const q = src.charAt(i);
  const triple = src.startsWith(q.repeat(3), i);
  i += triple ? 3 : 1;
  while (i < src.length) {
    const c = src.charAt(i);
    if (triple ? src.startsWith(q.repeat(3), i) : c === q) return i + (triple ? 3 : 1);
    if (!triple && (c === '\n' || c === '\r')) break;
    i += c === '\\' && !raw ? 2 : 1;
  }
  throw new Problem(start, 'unterminated string literal');
}

function scanNumber(src: string, start: number): number {
  let i = start;
  const digits = (re: RegExp) => {
    const from = i;
    while (i < src.length && re.test(src.charAt(i))) i++;
    return i - from;
  };
  if (src.startsWith('0x', i) || src.startsWith('0X', i)) {
    i += 2;
    if (digits(HEX) === 0) throw new Problem(start, 'invalid hexadecimal literal');
    if (/[uU]/.test(src.charAt(i))) i++;
    return i;
  }
  digits(DIGIT);
  let float = false;
  if (src.charAt(i) === '.' && DIGIT.test(src.charAt(i + 1))) {
    i++;
    digits(DIGIT);
    float = true;
  }
  if (/[eE]/.test(src.charAt(i))) {
    const save = i;
    i++;
    if (/[+-]/.test(src.charAt(i))) i++;
    if (digits(DIGIT) === 0) i = save;
    else float = true;
  }
  if (!float && /[uU]/.test(src.charAt(i))) i++;
  return i;
}

// ---------------------------------------------------------------------------------------------------------------
// Recognizer (CEL grammar, https://github.com/google/cel-spec/blob/master/doc/langdef.md#syntax)

const RELATIONS = new Set(['<', '<=', '>', '>=', '==', '!=', 'in']);
const MAX_DEPTH = 200;

class Recognizer {
  private pos = 0;
  private depth = 0;

  constructor(
    private readonly src: string,
    private readonly tokens: readonly Token[],
  ) {}

  expression(): void {
    this.expr();
    const t = this.peek();
    if (t.kind !== 'eof') {
      throw new Problem(
        t.start,
        t.text === ')' || t.text === ']' || t.text === '}' ? `unmatched '${t.text}'` : `unexpected ${describe(t)}`,
      );
    }
  }

  private peek(): Token {
    return this.tokens[this.pos] ?? this.tokens[this.tokens.length - 1]!;
  }

  private take(): Token {
    const t = this.peek();
    if (this.pos < this.tokens.length - 1) this.pos++;
    return t;
  }

  private at(text: string): boolean {
    const t = this.peek();
    return (t.kind === 'punct' || (t.kind === 'ident' && text === 'in')) && t.text === text;
  }

  private fail(expected: string): never {
    const t = this.peek();
    throw new Problem(t.start, `unexpected ${describe(t)}, expected ${expected}`);
  }

  private close(open: Token, closer: string): void {
    if (this.at(closer)) {
      this.take();
      return;
    }
    const t = this.peek();
    const { line, column } = positionAt(this.src, open.start);
    const where = `${line}:${column}`;
    throw new Problem(t.start, `unexpected ${describe(t)}, expected '${closer}' to close '${open.text}' at ${where}`);
  }

  private expr(): void {
    if (++this.depth > MAX_DEPTH) throw new Problem(this.peek().start, 'expression is nested too deeply');
    this.binary(0);
    if (this.at('?')) {
      this.take();
      this.binary(0);
      if (!this.at(':')) this.fail("':' of the conditional");
      this.take();
      this.expr();
    }
    this.depth--;
  }

  /** Levels: 0 `||`, 1 `&&`, 2 relations, 3 `+ -`, 4 `* / %`, 5 unary. */
  private binary(level: number): void {
    if (level === 5) return this.unary();
    const ops = BINARY_LEVELS[level]!;
    this.binary(level + 1);
    while (ops.has(this.peek().text) && (this.peek().kind === 'punct' || this.peek().text === 'in')) {
      this.take();
      this.binary(level + 1);
    }
  }

  private unary(): void {
    while (this.at('!') || this.at('-')) this.take();
    this.member();
  }

  private member(): void {
    let constructible = this.primary();
    for (;;) {
      if (this.at('.')) {
        this.take();
        if (this.peek().kind !== 'ident') this.fail('a field or method name after .');
        this.take();
        constructible = true;
        if (this.at('(')) {
          this.args(this.take());
          constructible = false;
        }
      } else if (this.at('[')) {
        const open = this.take();
        this.expr();
        this.close(open, ']');
        constructible = false;
      } else if (this.at('{') && constructible) {
        this.entries(this.take(), true);
        constructible = false;
      } else {
        return;
      }
    }
  }

  /** Returns whether a message construction `Name{...}` may follow. */
  private primary(): boolean {
    const t = this.peek();
    if (t.kind === 'number' || t.kind === 'string') {
      this.take();
      return false;
    }
    if (t.kind === 'ident') {
      if (t.text === 'in') this.fail('an operand');
      this.take();
      if (t.text === 'true' || t.text === 'false' || t.text === 'null') return false;
      if (this.at('(')) {
        this.args(this.take());
        return false;
      }
      return true;
    }
    if (this.at('.')) {
      this.take();
      if (this.peek().kind !== 'ident') this.fail('an identifier after a leading .');
      return this.primary();
    }
    if (this.at('(')) {
      const open = this.take();
      this.expr();
      this.close(open, ')');
      return false;
    }
    if (this.at('[')) {
      const open = this.take();
      while (!this.at(']')) {
        if (this.peek().kind === 'eof') this.close(open, ']');
        this.expr();
        if (!this.at(',')) break;
        this.take();
      }
      this.close(open, ']');
      return false;
    }
    if (this.at('{')) {
      this.entries(this.take(), false);
      return false;
    }
    return this.fail('an operand');
  }

  private args(open: Token): void {
    if (!this.at(')')) {
      if (this.peek().kind === 'eof') this.close(open, ')');
      this.expr();
      while (this.at(',')) {
        this.take();
        this.expr();
      }
    }
    this.close(open, ')');
  }

  /** Map literal `{k: v, ...}` or message fields `{name: v, ...}`; a trailing comma is allowed. */
  private entries(open: Token, fieldNames: boolean): void {
    while (!this.at('}')) {
      if (this.peek().kind === 'eof') this.close(open, '}');
      if (fieldNames) {
        if (this.peek().kind !== 'ident') this.fail('a field name');
        this.take();
      } else {
        this.expr();
      }
      if (!this.at(':')) this.fail("':'");
      this.take();
      this.expr();
      if (!this.at(',')) break;
      this.take();
    }
    this.close(open, '}');
  }
}

const BINARY_LEVELS: readonly ReadonlySet<string>[] = [
  new Set(['||']),
  new Set(['&&']),
  RELATIONS,
  new Set(['+', '-']),
  new Set(['*', '/', '%']),
];

function describe(t: Token): string {
  if (t.kind === 'eof') return 'end of expression';
  const text = t.text.length > 20 ? `${t.text.slice(0, 20)}…` : t.text;
  return `'${text}'`;
}
