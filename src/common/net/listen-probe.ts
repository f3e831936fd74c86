import { createServer } from 'node:net';

/**
 * Why nothing could listen on `host`:`port` right now (EADDRINUSE, EACCES, EADDRNOTAVAIL,
 * ENOTFOUND…), or undefined when it can: tried by listening and closing at once, so a start-up
 * can say so before it starts anything that would have to be undone.
 */
export function listenProbe(host: string, port: number): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}
