/**
 * A loopback port where nothing listens and nothing can start listening while the test runs.
 *
 * Binding a port and closing it again leaves a window in which another test file (or the kernel's
 * port-0 choice for one) takes the port; a connection then meets that server and fails with
 * ECONNRESET instead of ECONNREFUSED. Here the port is the local end of an established loopback
 * connection: the kernel keeps it bound (no listen or port-0 allocation can take it) while a SYN to
 * it finds no listener and is refused.
 */
import { connect, createServer, type Socket } from 'node:net';

/** Held for the life of the test process; unref'd so they never keep it alive. */
const held: Socket[] = [];

export async function closedPort(): Promise<number> {
  return (await reservedPort()).port;
}

/**
 * A closed port as closedPort's, that a test may open itself later ("the receiver is back"): release() ends the
 * connection that holds it.
 */
export async function reservedPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const acceptedP = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const client = connect((server.address() as { port: number }).port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => client.once('connect', resolve).once('error', reject));
  const accepted = await acceptedP;
  for (const s of [client, accepted]) s.unref();
  held.push(client, accepted);
  // Stop listening; the established connection stays and keeps its local port bound.
  server.close();
  server.unref();
  const port = client.localPort;
  if (port === undefined) throw new Error('closedPort: the loopback connection has no local port');
  return {
    port,
    release: async () => {
      // The accepted end resets the connection: no TIME_WAIT on either end (one on the holding end would keep the
      // port bound: the connecting socket had no SO_REUSEADDR).
      const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
      client.on('error', () => {}); // ECONNRESET, expected
      accepted.resetAndDestroy();
      await closed;
    },
  };
}
