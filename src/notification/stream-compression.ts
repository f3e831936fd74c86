import type { PerMessageDeflateOptions, WebSocket } from 'ws';

/**
 * permessage-deflate (RFC 7692) on the stream, when the client offers it, with the zlib memory it
 * takes bounded whatever the number of connections.
 *
 * `WS_COMPRESSION=on` (the default): neither side keeps a compression context between messages,
 * and the zlib stream a message was compressed (or a client's message inflated) with is freed as
 * soon as the message is done: ws would keep it for the life of the connection (about 80 KiB
 * each, window and hash tables), though no context takeover means it carries nothing into the
 * next message. So an idle connection holds no zlib state, and the whole process holds at most
 * one per compression running at once (CONCURRENCY + 1). With the small window, tables and output
 * buffer below, a fresh zlib stream per message costs about the CPU of reusing one (some 30 µs a
 * notification either way, measured with zlib alone); with zlib's defaults it costs three times more.
 *
 * `WS_COMPRESSION=context-takeover`: the server keeps its context from message to message, unless
 * the client asks it not to; repeated fields then cost a few bytes (a notification of the seed's
 * shape goes from about 69 % of its size to about 16 %), but every connection that was sent a
 * message keeps its zlib stream: about 80 KiB each (measured), for as long as it is open.
 *
 * `WS_COMPRESSION=off`: no extension is negotiated; frames go as they are.
 */
export const WS_COMPRESSION_MODES = ['on', 'off', 'context-takeover'] as const;
export type WsCompression = (typeof WS_COMPRESSION_MODES)[number];

/** RFC 7692's name of the extension, as ws keys it. */
const PERMESSAGE_DEFLATE = 'permessage-deflate';

/**
 * The server's LZ77 window: 1 KiB, which holds a notification of the seed's shape (about 450
 * bytes) and, with context takeover, the one before it, so a bigger window saves nothing on them.
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
 * Compressions running at once in the process (ws's default is 10): libuv's thread pool has 4
 * threads unless UV_THREADPOOL_SIZE says otherwise, and a compression queued there would hold its
 * zlib stream while it waits. ws applies the limit of the first extension it creates in a process.
 */
const CONCURRENCY = 4;

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
  params: { server_no_context_takeover?: boolean; client_no_context_takeover?: boolean };
  compress(data: Buffer | string, fin: boolean, callback: Callback): void;
  decompress(data: Buffer, fin: boolean, callback: Callback): void;
  /** Created by the first message each way, then kept until the connection closes. */
  _deflate: { close(): void } | null;
  _inflate: { close(): void } | null;
}

/**
 * Frees the socket's zlib streams after each whole message in a direction without context
 * takeover; the next message creates a new one. ws hands each socket's messages to its extension
 * one at a time (the sender queues the next until this one's callback, the receiver reads no
 * further meanwhile), so no other message is using the stream when it is freed. A socket without
 * the extension is left as it is.
 */
export function releaseZlibBetweenMessages(socket: WebSocket): void {
  const extension = (socket as unknown as { _extensions: Record<string, PerMessageDeflate | undefined> })._extensions[PERMESSAGE_DEFLATE];
  if (!extension) return;
  if (extension.params.server_no_context_takeover) {
    const compress = extension.compress.bind(extension);
    extension.compress = (data, fin, callback) =>
      compress(data, fin, (error, result) => {
        if (fin) {
          extension._deflate?.close();
          extension._deflate = null;
        }
        callback(error, result);
      });
  }
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
