import { positionAt } from './position.js';

/** A filter expression that cannot be used for routing. `message` is `<line>:<column>: <reason>`. */
export class FilterCompileError extends Error {
  readonly code = 'INVALID_FILTER_EXPRESSION' as const;
  /** The reason without the position prefix. */
  readonly reason: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based, in UTF-16 code units. */
  readonly column: number;

  constructor(reason: string, line: number, column: number) {
    super(`${line}:${column}: ${reason}`);
    this.name = 'FilterCompileError';
    this.reason = reason;
    this.line = line;
    this.column = column;
  }

  static at(source: string, offset: number, reason: string): FilterCompileError {
    const { line, column } = positionAt(source, offset);
    return new FilterCompileError(reason, line, column);
  }
}
