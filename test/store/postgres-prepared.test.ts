/**
 * Which of the queue's statements are named (prepared) on PostgreSQL (src/store/postgres.ts PreparedNames): a prepared
 * statement holds its plan in the server's memory for the connection's life, so only short texts are named, at most
 * MAX_PREPARED of them, and one text always gets the same name.
 */
import { describe, expect, it } from 'vitest';
import { PreparedNames } from '../../src/store/postgres.js';

const short = (i: number) => `SELECT ${i} FROM deliveries WHERE id = ?`;

describe('PreparedNames', () => {
  it('names a short text once and reuses the name, with the text in PostgreSQL placeholders', () => {
    const p = new PreparedNames();
    const a = p.config(short(1), ['x']);
    expect(a).toEqual({ name: 'cmn_0', text: 'SELECT 1 FROM deliveries WHERE id = $1', values: ['x'] });
    expect(p.config(short(1), ['y'])).toEqual({ ...a, values: ['y'] });
    expect(p.config(short(2), []).name).toBe('cmn_1');
  });

  it('sends a long text (a large batched group) unnamed', () => {
    const p = new PreparedNames();
    const long = `WITH v(vid) AS (VALUES ${Array.from({ length: 1000 }, () => '(?)').join(', ')}) SELECT vid FROM v`;
    const c = p.config(long, []);
    expect(c.name).toBeUndefined();
    expect(c.text.startsWith('WITH v(vid) AS (VALUES ($1), ($2)')).toBe(true);
    // and it takes no slot: the next short text is still the first name
    expect(p.config(short(1), []).name).toBe('cmn_0');
  });

  it('names at most 128 texts; later texts go unnamed, earlier ones keep their names', () => {
    const p = new PreparedNames();
    for (let i = 0; i < 200; i++) p.config(short(i), []);
    expect(p.config(short(127), []).name).toBe('cmn_127');
    expect(p.config(short(128), []).name).toBeUndefined();
    expect(p.config(short(199), []).name).toBeUndefined();
    expect(p.config(short(0), []).name).toBe('cmn_0');
  });
});
