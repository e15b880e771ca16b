/** A TCP proxy between the operator and the apiserver that a test can cut (drop every connection) and block. */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** https://127.0.0.1:<port> (TLS passes through untouched) */
  readonly url: string;
  /** destroy every open connection (watches break mid-stream) */
  cut(): void;
  /** refuse new connections (accepted and destroyed at once) until unblock() */
  block(): void;
  unblock(): void;
  /** every open connection stops passing data either way but stays open (a half-open peer: no FIN, no RST) */
  blackhole(): void;
  /** connections accepted so far */
  readonly accepted: number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const t = new URL(target);
  const host = t.hostname;
  const port = Number(t.port);
  const live = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  let blocked = false;
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted++;
    if (blocked) {
      client.destroy();
      return;
    }
    const upstream = connect({ host, port });
    live.add(client);
    live.add(upstream);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
      live.delete(client);
      live.delete(upstream);
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  const p = typeof addr === 'object' && addr ? addr.port : 0;
  const cut = (): void => {
    for (const s of live) s.destroy();
    live.clear();
  };
  return {
    url: `https://127.0.0.1:${p}`,
    cut,
    block() {
      blocked = true;
    },
    unblock() {
      blocked = false;
    },
    blackhole() {
      for (const [c, u] of pairs) {
        c.unpipe(u);
        u.unpipe(c);
        c.pause();
        u.pause();
      }
      pairs.clear();
    },
    get accepted() {
      return accepted;
    },
    async close() {
      cut();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
