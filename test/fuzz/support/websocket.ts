import type { Socket } from 'node:net';

/** RFC 6455 frames on a raw socket: what a client sends (any bits, any length), and what the server answers. */

export const OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

export interface ClientFrame {
  fin: boolean;
  /** RSV1-3 as three bits (0-7); non-zero is a protocol error without an extension. */
  rsv: number;
  opcode: number;
  payload: Uint8Array;
  /** Client frames must be masked (RFC 6455 §5.1). */
  masked: boolean;
  /** A length header that lies: the payload sent stays `payload`. */
  declaredLength?: number;
}

const MASK = Buffer.from([0x37, 0xfa, 0x21, 0x3d]);

export function encodeFrame(frame: ClientFrame): Buffer {
  const length = frame.declaredLength ?? frame.payload.length;
  const head: number[] = [(frame.fin ? 0x80 : 0) | ((frame.rsv & 7) << 4) | (frame.opcode & 0x0f)];
  const maskBit = frame.masked ? 0x80 : 0;
  let extended = Buffer.alloc(0);
  if (length < 126) head.push(maskBit | length);
  else if (length < 65_536) {
    head.push(maskBit | 126);
    extended = Buffer.alloc(2);
    extended.writeUInt16BE(length);
  } else {
    head.push(maskBit | 127);
    extended = Buffer.alloc(8);
    extended.writeBigUInt64BE(BigInt(length));
  }
  const payload = Buffer.from(frame.payload);
  if (frame.masked) for (let index = 0; index < payload.length; index++) payload[index] ^= MASK[index % 4];
  return Buffer.concat([Buffer.from(head), extended, frame.masked ? MASK : Buffer.alloc(0), payload]);
}

export interface ServerFrame {
  opcode: number;
  payload: Buffer;
}

/** Reads server frames (unmasked) as they arrive, until the socket ends. */
export class FrameReader {
  readonly frames: ServerFrame[] = [];
  ended = false;
  private buffer: Buffer;
  private waiters: (() => void)[] = [];

  constructor(socket: Socket, initial: Buffer = Buffer.alloc(0)) {
    this.buffer = initial;
    this.parse();
    socket.on('data', (data: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, data]);
      this.parse();
    });
    const end = () => {
      this.ended = true;
      this.wake();
    };
    socket.on('close', end);
    socket.on('end', end);
    socket.on('error', end);
  }

  private parse() {
    for (;;) {
      if (this.buffer.length < 2) return;
      const opcode = this.buffer[0] & 0x0f;
      let length = this.buffer[1] & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.buffer.length < 4) return;
        length = this.buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.buffer.length < 10) return;
        length = Number(this.buffer.readBigUInt64BE(2));
        offset = 10;
      }
      if (this.buffer.length < offset + length) return;
      this.frames.push({ opcode, payload: this.buffer.subarray(offset, offset + length) });
      this.buffer = this.buffer.subarray(offset + length);
      this.wake();
    }
  }

  private wake() {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** The close code the server sent (1005 for a close frame without one), if it sent a close frame. */
  get closeCode(): number | undefined {
    const close = this.frames.find((frame) => frame.opcode === OPCODE.close);
    if (!close) return undefined;
    return close.payload.length >= 2 ? close.payload.readUInt16BE(0) : 1005;
  }

  /** Resolves when `condition` holds, the socket ends, or `timeoutMs` passes. */
  async until(condition: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition() && !this.ended && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}
