import { createServer, connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { closedPort, reservedPort } from './ports.js';

const listenError = (port: number, host?: string) =>
  new Promise<string>((resolve) => {
    const s = createServer();
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    s.listen(port, host, () => s.close(() => resolve('listening')));
  });

describe('closedPort', () => {
  it('refuses connections', async () => {
    const port = await closedPort();
    const code = await new Promise<string>((resolve) => {
      const c = connect(port, '127.0.0.1');
      c.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
      c.once('connect', () => {
        c.destroy();
        resolve('connected');
      });
    });
    expect(code).toBe('ECONNREFUSED');
  });

  it('cannot be taken by another server while the test runs (a bound-then-closed port could)', async () => {
    const port = await closedPort();
    expect(await listenError(port, '127.0.0.1')).toBe('EADDRINUSE');
    expect(await listenError(port)).toBe('EADDRINUSE');
  });

  it('reservedPort: refused until released, then a server can listen on it', async () => {
    const r = await reservedPort();
    expect(await listenError(r.port, '127.0.0.1')).toBe('EADDRINUSE');
    await r.release();
    expect(await listenError(r.port, '127.0.0.1')).toBe('listening');
  });
});
