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
  const server = createServer((accepted) => {
    accepted.unref();
    held.push(accepted);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = connect((server.address() as { port: number }).port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => client.once('connect', resolve).once('error', reject));
  client.unref();
  held.push(client);
  // Stop listening; the established connection stays and keeps its local port bound.
  server.close();
  server.unref();
  const port = client.localPort;
  if (port === undefined) throw new Error('closedPort: the loopback connection has no local port');
  return port;
}
