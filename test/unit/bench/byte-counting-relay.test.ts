import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type ByteCountingRelay, startByteCountingRelay } from '../../../bench/lib/byte-counting-relay.js';

/**
 * The ship benchmarks' byte counter (bench/lib/byte-counting-relay.ts) between a real TCP client
 * and server: every byte that crosses is counted in its direction, once, and an exchange is a run
 * of chunks with a quiet gap around it.
 */

let server: Server | undefined;
let relay: ByteCountingRelay | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await relay?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  [server, relay] = [undefined, undefined];
});

/** A server that answers each `n` bytes it reads with `3 n` bytes, and a client through the relay. */
async function through() {
  server = createServer((socket) => {
    sockets.push(socket);
    socket.on('data', (data) => socket.write(Buffer.alloc(3 * data.length, 'x')));
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  relay = await startByteCountingRelay((server.address() as AddressInfo).port);
  const client = connect({ host: '127.0.0.1', port: Number(new URL(relay.base).port) });
  sockets.push(client);
  await once(client, 'connect');
  let received = 0;
  client.on('data', (data) => (received += data.length));
  return { client, received: () => received };
}

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('the byte-counting relay', () => {
  it('counts every byte that crosses, each in its direction', async () => {
    const { client, received } = await through();
    client.write(Buffer.alloc(1000, 'a'));
    await until(() => received() === 3000);
    expect(relay!.bytes()).toEqual({ up: 1000, down: 3000, total: 4000 });
    expect(relay!.connections()).toBe(1);
  });

  it('takes the bytes of a window, and counts the exchanges in it by their quiet gaps', async () => {
    const { client, received } = await through();
    client.write('first');
    await until(() => received() === 15);
    await relay!.quiet(200);
    const from = Date.now();
    for (const [index, message] of ['one', 'three'].entries()) {
      client.write(message);
      await until(() => received() === 15 + 9 + (index === 1 ? 15 : 0));
      await relay!.quiet(200);
    }
    const to = Date.now();
    expect(relay!.bytes(from, to)).toEqual({ up: 8, down: 24, total: 32 });
    expect(relay!.exchanges(from, to, 100)).toBe(2);
  });
});
