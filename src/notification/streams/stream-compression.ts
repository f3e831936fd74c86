import { constants as zlibConstants, deflateRawSync } from 'node:zlib';
import type { PerMessageDeflateOptions, WebSocket } from 'ws';
import type { WsCompression } from '../../config/env.js';

/**
 * permessage-deflate (RFC 7692) on the stream, when the client offers it, with the zlib memory it
 * takes bounded whatever the number of connections.
 *
 * `WS_COMPRESSION=on` (the default): neither side keeps a compression context between messages,
 * so no zlib state outlives a message (ws would keep a stream each way for the life of the
 * connection, about 80 KiB each, though it carries nothing into the next message). A message up
 * to 2 KiB, every notification of the seed's shape, is compressed where it is sent, in one
 * synchronous call: about 10 µs for one of 400 bytes, where ws's trip through the thread pool
 * costs 30 (measured with zlib alone). A bigger one goes through ws's zlib stream, on the thread
 * pool, and the stream is freed when its message is done; a client's message likewise. So an idle
 * connection holds no zlib state, and the process only those of the compressions under way.
 *
 * `WS_COMPRESSION=context-takeover`: the server's messages refer back to the ones before them,
 * unless the client asks for none; repeated fields then cost a few bytes (a notification of the
 * seed's shape goes from about 69 % of its size to about 16 %). What a context carries into the
 * next message is only the window: the last 1 KiB the client inflated. So instead of a zlib stream
 * per connection (about 80 KiB), each connection keeps that 1 KiB of text, and each message is
 * compressed in place with it as zlib's preset dictionary: the client's inflater holds the same
 * bytes in its window, so the references resolve there as if one stream had made them.
 *
 * `WS_COMPRESSION=off`: no extension is negotiated; frames go as they are.
 *
 * The modes' list (WS_COMPRESSION_MODES) is config's, so that config imports nothing of the stream.
 */

/** RFC 7692's name of the extension, as ws keys it. */
const PERMESSAGE_DEFLATE = 'permessage-deflate';

/**
 * The server's LZ77 window: 1 KiB, which holds a notification of the seed's shape (about 450
 * bytes) and, with context takeover, the one before it, so a bigger window saves nothing on them
 * (and it is what a connection keeps with context takeover).
 * It bounds the client's inflate window too. A client that asks for a smaller one
 * (server_max_window_bits 8 or 9) is refused by ws with 400, so it must not ask.
 */
const SERVER_WINDOW_BITS = 10;
/** zlib's hash table and literal buffer: as small as compresses the seed's shape as well as zlib's default (8) does. */
const MEM_LEVEL = 4;
/** zlib's output buffer, allocated with each stream (16 KiB by default): one compressed notification fits. */
const ZLIB_CHUNK_BYTES = 1024;
/** Messages shorter than this are sent as they are: deflate's block overhead eats what it would save (a 27-byte message grows). */
const THRESHOLD_BYTES = 128;
/**
 * Compressions running at once on the thread pool (ws's default is 10): libuv's pool has 4 threads
 * unless UV_THREADPOOL_SIZE says otherwise, and a compression queued there would hold its zlib
 * stream while it waits. ws applies the limit of the first extension it creates in a process.
 */
const CONCURRENCY = 4;
/**
 * Messages up to this size, without context takeover, are compressed in place (synchronously):
 * below it, the thread pool's round trip costs the event loop more than the compression itself
 * (about 40 µs for 4 KiB in place; 270 µs for 64 KiB, which is better left to the pool).
 */
const IN_PLACE_MAX_BYTES = 2048;

/** ws's server options for `mode`: false when the stream compresses nothing. */
export function perMessageDeflateOptions(mode: WsCompression): PerMessageDeflateOptions | false {
  if (mode === 'off') return false;
  return {
    // Left unset with context takeover, so a client that asks for none still gets none.
    ...(mode === 'on' ? { serverNoContextTakeover: true } : {}),
    // Clients send the server nothing worth a context (v2's acks and tokens are short).
    clientNoContextTakeover: true,
    serverMaxWindowBits: SERVER_WINDOW_BITS,
    threshold: THRESHOLD_BYTES,
    concurrencyLimit: CONCURRENCY,
    zlibDeflateOptions: { memLevel: MEM_LEVEL, chunkSize: ZLIB_CHUNK_BYTES },
    zlibInflateOptions: { chunkSize: ZLIB_CHUNK_BYTES },
  };
}

type Callback = (error: Error | null, result?: Buffer) => void;

/** The parts of ws's PerMessageDeflate (lib/permessage-deflate.js) this module relies on. */
interface PerMessageDeflate {
  /** The negotiated parameters. */
  params: { server_no_context_takeover?: boolean; client_no_context_takeover?: boolean; server_max_window_bits?: number };
  compress(data: Buffer | string, fin: boolean, callback: Callback): void;
  decompress(data: Buffer, fin: boolean, callback: Callback): void;
  /** Created by the first message each way that goes through ws's own path, then kept until the connection closes. */
  _deflate: { close(): void } | null;
  _inflate: { close(): void } | null;
}

/**
 * Makes each direction keep no zlib state between messages. Without context takeover, a small
 * message is compressed in place, any other one through ws's zlib stream, which is freed when its
 * message is done (the next one creates a new one). With it, every message is compressed in place
 * against the window the client holds. ws hands each socket's messages to its extension one at a
 * time (the sender queues the next until this one's callback, the receiver reads no further
 * meanwhile), so no other message is using the stream when it is freed, and the window is the
 * client's when the next message is compressed. A socket without the extension is left as it is.
 */
export function boundCompressionMemory(socket: WebSocket): void {
  // Should a ws upgrade rename these private parts, ws's own behaviour stands (and the unit test fails), never a crash.
  const extension = (socket as unknown as { _extensions?: Record<string, PerMessageDeflate | undefined> })._extensions?.[PERMESSAGE_DEFLATE];
  if (!extension || typeof extension.compress !== 'function' || typeof extension.decompress !== 'function') return;
  const windowBits = extension.params.server_max_window_bits ?? zlibConstants.Z_DEFAULT_WINDOWBITS;
  if (extension.params.server_no_context_takeover) compressEachAlone(extension, windowBits);
  else compressAgainstWindow(extension, windowBits);
  if (extension.params.client_no_context_takeover) {
    const decompress = extension.decompress.bind(extension);
    extension.decompress = (data, fin, callback) =>
      decompress(data, fin, (error, result) => {
        if (fin) {
          extension._inflate?.close();
          extension._inflate = null;
        }
        callback(error, result);
      });
  }
}

/** No context: small whole messages in place, the others through ws's stream, freed after each. */
function compressEachAlone(extension: PerMessageDeflate, windowBits: number): void {
  const compress = extension.compress.bind(extension);
  /** A fragmented message's fragments share ws's stream up to its last one. */
  let midMessage = false;
  extension.compress = (data, fin, callback) => {
    if (fin && !midMessage && Buffer.byteLength(data) <= IN_PLACE_MAX_BYTES) return callback(null, endMessage(deflateInPlace(data, windowBits)));
    midMessage = !fin;
    compress(data, fin, (error, result) => {
      if (fin) {
        extension._deflate?.close();
        extension._deflate = null;
      }
      callback(error, result);
    });
  };
}

/**
 * Context takeover with 1 KiB per connection: each message, or fragment, is compressed in place
 * with the last window's worth of what went before as its dictionary. Only what went through
 * compress enters the window: ws sends a message under the threshold as it is, and the client
 * does not inflate it.
 */
function compressAgainstWindow(extension: PerMessageDeflate, windowBits: number): void {
  const windowBytes = 1 << windowBits;
  let window: Buffer | undefined;
  extension.compress = (data, fin, callback) => {
    const plain = typeof data === 'string' ? Buffer.from(data) : data;
    const deflated = deflateInPlace(plain, windowBits, window);
    const joined = window ? Buffer.concat([window, plain]) : plain;
    // A copy, so the window never keeps a bigger message's buffer alive.
    window = Buffer.from(joined.subarray(Math.max(0, joined.length - windowBytes)));
    callback(null, fin ? endMessage(deflated) : deflated);
  };
}

/** Compressed as ws's stream would (a sync flush), in one call; against `dictionary` when given. */
function deflateInPlace(data: Buffer | string, windowBits: number, dictionary?: Buffer): Buffer {
  return deflateRawSync(data, { windowBits, memLevel: MEM_LEVEL, chunkSize: ZLIB_CHUNK_BYTES, finishFlush: zlibConstants.Z_SYNC_FLUSH, ...(dictionary ? { dictionary } : {}) });
}

/** The sync flush ends with an empty stored block (00 00 ff ff), which the sender removes at a message's end (RFC 7692 §7.2.1). */
function endMessage(deflated: Buffer): Buffer {
  return deflated.subarray(0, deflated.length - 4);
}
