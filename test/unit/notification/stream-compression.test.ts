import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import type { WsCompression } from '../../../src/config/env.js';
import { perMessageDeflateOptions, boundCompressionMemory } from '../../../src/notification/streams/stream-compression.js';
import { pushedMessage, validNotification } from '../../factories/notification.factory.js';

/**
 * The stream's permessage-deflate settings on a real `ws` server and client, and what
 * boundCompressionMemory relies on in ws (lib/permessage-deflate.js): ws keeps a socket's zlib
 * streams after a message, under `_extensions['permessage-deflate']._deflate` and `._inflate`; with
 * the release they are gone after each message, and messages still arrive intact both ways. If ws
 * changes those internals, the tests of what plain ws keeps fail first.
 */

interface Extension {
  _deflate: unknown;
  _inflate: unknown;
}

const servers: WebSocketServer[] = [];
const clients: WebSocket[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.terminate();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A server with the stream's settings for `mode` (released as the stream does unless `release` is false), and a client connected to it. */
async function pair(mode: WsCompression, release = true) {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: perMessageDeflateOptions(mode) });
  servers.push(server);
  await new Promise((resolve) => server.once('listening', resolve));
  const accepted = new Promise<WebSocket>((resolve) =>
    server.once('connection', (socket) => {
      if (release) boundCompressionMemory(socket);
      resolve(socket);
    }),
  );
  // The client compresses whatever it sends, as a browser does.
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`, { perMessageDeflate: { threshold: 0 } });
  clients.push(client);
  await new Promise((resolve) => client.once('open', resolve));
  const socket = await accepted;
  const extension = (socket as unknown as { _extensions: Record<string, Extension> })._extensions['permessage-deflate'];
  return { socket, client, extension };
}

/** A pushed notification of the usual shape, numbered (the same text for the same number). */
const message = (index: number) =>
  JSON.stringify(
    pushedMessage(validNotification('recipient', { correlationId: `3f1e2d4c-5b6a-4789-9abc-${String(index).padStart(12, '0')}`, routeCalculationScheduleId: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d' })),
  );

/** Sends `texts` at once from `from`; resolves once every send callback ran. */
const sendAll = (from: WebSocket, texts: string[]) =>
  Promise.all(texts.map((text) => new Promise<void>((resolve, reject) => from.send(text, (error) => (error ? reject(error) : resolve())))));

/** Sends one message in `fragments` (fin on the last); resolves once the last one's send callback ran. */
const sendFragments = (from: WebSocket, fragments: string[]) =>
  new Promise<void>((resolve, reject) =>
    fragments.forEach((fragment, index) =>
      from.send(fragment, { fin: index === fragments.length - 1 }, (error) => (error ? reject(error) : index === fragments.length - 1 && resolve())),
    ),
  );

/** Resolves with the next `count` text messages `to` receives. */
const receive = (to: WebSocket, count: number) =>
  new Promise<string[]>((resolve) => {
    const received: string[] = [];
    const onMessage = (data: WebSocket.RawData) => {
      received.push(data.toString());
      if (received.length < count) return;
      to.off('message', onMessage);
      resolve(received);
    };
    to.on('message', onMessage);
  });

describe('WS_COMPRESSION=on', () => {
  it('plain ws keeps a zlib stream each way after a message (what the release is for)', async () => {
    const { socket, client, extension } = await pair('on', false);
    const toClient = receive(client, 1);
    await sendAll(socket, [message(1)]);
    await toClient;
    const toServer = receive(socket, 1);
    await sendAll(client, [message(2)]);
    await toServer;
    expect(extension._deflate).not.toBeNull();
    expect(extension._inflate).not.toBeNull();
  });

  it('frees the zlib stream after each message sent, one at a time and in a burst; the client gets every message intact, in order', async () => {
    const { socket, client, extension } = await pair('on');
    for (let index = 0; index < 5; index++) {
      const received = receive(client, 1);
      await sendAll(socket, [message(index)]);
      expect(extension._deflate).toBeNull();
      expect(await received).toEqual([message(index)]);
    }
    const burst = Array.from({ length: 200 }, (_, index) => message(1000 + index));
    const received = receive(client, burst.length);
    await sendAll(socket, burst);
    expect(extension._deflate).toBeNull();
    expect(await received).toEqual(burst);
  });

  it('compresses a message over 2 KiB through ws\'s zlib stream and frees it after; the client gets each intact', async () => {
    const { socket, client, extension } = await pair('on');
    const texts = [2048, 2049, 65_536].map((size, index) => `${index}`.repeat(size));
    for (const text of texts) {
      const received = receive(client, 1);
      await sendAll(socket, [text]);
      expect(extension._deflate).toBeNull();
      expect(await received).toEqual([text]);
    }
    // Many at once, big and small mixed: each big one waits for the thread pool while the small ones queue behind it.
    const mixed = Array.from({ length: 60 }, (_, index) => (index % 3 === 0 ? message(index).repeat(20) : message(index)));
    const received = receive(client, mixed.length);
    await sendAll(socket, mixed);
    expect(await received).toEqual(mixed);
    expect(extension._deflate).toBeNull();
  });

  it('sends a fragmented message through one zlib stream, whatever the size of its last fragment', async () => {
    const { socket, client, extension } = await pair('on');
    const fragments = ['a'.repeat(3000), 'b'.repeat(500), 'c'.repeat(200)];
    const received = receive(client, 1);
    await sendFragments(socket, fragments);
    expect(await received).toEqual([fragments.join('')]);
    expect(extension._deflate).toBeNull();
    // And the next whole message is compressed in place again.
    const next = receive(client, 1);
    await sendAll(socket, [message(1)]);
    expect(await next).toEqual([message(1)]);
  });

  it('frees the zlib stream after each message received; the server reads each intact', async () => {
    const { socket, client, extension } = await pair('on');
    const texts = Array.from({ length: 50 }, (_, index) => message(index));
    const received = receive(socket, texts.length);
    await sendAll(client, texts);
    expect(await received).toEqual(texts);
    expect(extension._inflate).toBeNull();
  });

  it('sends messages under 128 bytes as they are, and compresses from 128 on', async () => {
    const { socket, client } = await pair('on');
    const wire = (client as unknown as { _socket: { bytesRead: number } })._socket;
    const bytesFor = async (text: string) => {
      const before = wire.bytesRead;
      const received = receive(client, 1);
      await sendAll(socket, [text]);
      expect(await received).toEqual([text]);
      return wire.bytesRead - before;
    };
    // 4 bytes of frame header (a payload over 125 bytes) and the text as it is.
    expect(await bytesFor('a'.repeat(127))).toBe(4 + 127);
    expect(await bytesFor('a'.repeat(128))).toBeLessThan(20);
  });
});

describe('WS_COMPRESSION=context-takeover', () => {
  it('plain ws keeps its zlib stream along the connection (what the window replaces)', async () => {
    const { socket, client, extension } = await pair('context-takeover', false);
    const toClient = receive(client, 1);
    await sendAll(socket, [message(1)]);
    await toClient;
    expect(extension._deflate).not.toBeNull();
  });

  it('keeps no zlib stream either way; messages arrive intact, and each after the first in a fraction of its bytes', async () => {
    const { socket, client, extension } = await pair('context-takeover');
    const wire = (client as unknown as { _socket: { bytesRead: number } })._socket;
    const sizes: number[] = [];
    for (let index = 0; index < 20; index++) {
      const before = wire.bytesRead;
      const received = receive(client, 1);
      await sendAll(socket, [message(index)]);
      expect(await received).toEqual([message(index)]);
      sizes.push(wire.bytesRead - before);
    }
    expect(extension._deflate).toBeNull();
    // Without the window every message costs what the first does (about 69 % of its size).
    for (const size of sizes.slice(1)) expect(size).toBeLessThan(sizes[0]! / 3);
    const texts = Array.from({ length: 20 }, (_, index) => message(index));
    const toServer = receive(socket, texts.length);
    await sendAll(client, texts);
    expect(await toServer).toEqual(texts);
    expect(extension._inflate).toBeNull();
  });

  it('keeps the window the client holds through bursts, short messages sent as they are, messages over 1 KiB and fragments', async () => {
    const { socket, client, extension } = await pair('context-takeover');
    const texts = Array.from({ length: 300 }, (_, index) =>
      index % 4 === 1 ? `short ${index}` : index % 4 === 2 ? message(index).repeat(5) : message(index),
    );
    const received = receive(client, texts.length + 1);
    await sendAll(socket, texts);
    const fragments = [message(1), 'b'.repeat(500), message(2)];
    await sendFragments(socket, fragments);
    expect(await received).toEqual([...texts, fragments.join('')]);
    const next = receive(client, 1);
    await sendAll(socket, [message(3)]);
    expect(await next).toEqual([message(3)]);
    expect(extension._deflate).toBeNull();
  });
});

describe('WS_COMPRESSION=off', () => {
  it('negotiates no extension', async () => {
    const { client, extension } = await pair('off');
    expect(client.extensions).toBe('');
    expect(extension).toBeUndefined();
  });
});
