/**
 * Proof that bench/lib/satellite-link.ts works: a line echo server in the root namespace, a probe
 * inside the link's namespace, and what the probe measures through the link — the first exchange
 * of a new connection (TCP's handshake and one round trip: ~2 RTT), the round trip of a small
 * message (~1200 ms at 600 ms one way, more when a loss stalls it), the rate of a bulk transfer,
 * and how long a connection takes to notice a cut and to resume after it. Needs root.
 *
 *   npx tsx bench/satellite-check.ts [--delay 600] [--loss 1] [--rate 512] [--rounds 10] [--cut 3000] [--relay]
 *
 * Prints one JSON object. The same file is the probe (`--probe rtt|cut HOST PORT`), run inside
 * the namespace by the check.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openSatelliteLink } from './lib/satellite-link.js';
import { median, round } from './lib/ws-common.js';

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    delay: { type: 'string', default: '600' },
    loss: { type: 'string', default: '1' },
    rate: { type: 'string', default: '512' },
    rounds: { type: 'string', default: '10' },
    cut: { type: 'string', default: '3000' },
    bulk: { type: 'string', default: '65536' },
    relay: { type: 'boolean', default: false },
    probe: { type: 'string' },
  },
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A line protocol: `ping N` is echoed; `bulk N` is answered with N bytes and a newline. */
function echoServer() {
  return createServer((socket) => {
    socket.on('error', () => {});
    let pending = '';
    socket.on('data', (chunk) => {
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 1);
        const bulk = /^bulk (\d+)$/.exec(line);
        socket.write(bulk ? `${'x'.repeat(Number(bulk[1]))}\n` : `${line}\n`);
      }
    });
  });
}

/** A connection that sends a line and waits for the next line back. */
async function lineClient(host: string, port: number, timeoutMs: number) {
  const socket: Socket = connect({ host, port, noDelay: true });
  const timer = setTimeout(() => socket.destroy(new Error('connect timed out')), timeoutMs);
  await once(socket, 'connect').finally(() => clearTimeout(timer));
  let pending = '';
  const lines: string[] = [];
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  socket.on('data', (chunk) => {
    pending += chunk.toString('latin1');
    for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
      lines.push(pending.slice(0, end));
      pending = pending.slice(end + 1);
    }
    wake?.();
  });
  const fail = (error: Error) => {
    failure = error;
    wake?.();
  };
  socket.on('error', fail);
  socket.on('close', () => fail(failure ?? new Error('closed')));
  return {
    socket,
    async exchange(line: string, waitMs: number): Promise<string> {
      socket.write(`${line}\n`);
      const deadline = Date.now() + waitMs;
      while (lines.length === 0) {
        if (failure) throw failure;
        if (Date.now() > deadline) throw new Error(`no answer within ${waitMs} ms`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 100);
        });
      }
      return lines.shift()!;
    },
  };
}

/** Inside the namespace: round trips, then one bulk transfer. */
async function probeRtt(host: string, port: number, rounds: number, bulkBytes: number) {
  const started = Date.now();
  const client = await lineClient(host, port, 10_000);
  const connectMs = Date.now() - started;
  await client.exchange('ping 0', 20_000);
  const firstExchangeMs = Date.now() - started;
  const rtts: number[] = [];
  for (let i = 1; i <= rounds; i++) {
    const sent = Date.now();
    await client.exchange(`ping ${i}`, 20_000);
    rtts.push(Date.now() - sent);
  }
  let firstByteAt = 0;
  client.socket.once('data', () => (firstByteAt = Date.now()));
  const answer = await client.exchange(`bulk ${bulkBytes}`, 120_000);
  // From the first byte to the last: the rate, without the round trip before it.
  const transferMs = Date.now() - firstByteAt;
  client.socket.destroy();
  return { connectMs, firstExchangeMs, rtts, bulk: { bytes: answer.length, transferMs } };
}

/**
 * Inside the namespace: pings every 500 ms for `runMs` (a ping unanswered within `answerMs` counts
 * as a lost connection, as a client's liveness check would), reconnecting until a ping is answered
 * again; reports the slowest ping, and when the loss was noticed and the connection resumed.
 */
async function probeCut(host: string, port: number, answerMs: number, runMs: number) {
  let client = await lineClient(host, port, 10_000);
  await client.exchange('ping ready', 20_000);
  const readyAt = Date.now();
  console.log(JSON.stringify({ ready: readyAt }));
  let lost: { at: number; by: string } | undefined;
  let slowestMs = 0;
  for (let i = 0; Date.now() - readyAt < runMs; i++) {
    try {
      const sent = Date.now();
      await client.exchange(`ping ${i}`, answerMs);
      slowestMs = Math.max(slowestMs, Date.now() - sent);
      if (lost) return { lostAt: lost.at, lostBy: lost.by, resumedAt: Date.now(), slowestMs };
      await sleep(500);
    } catch (error) {
      lost ??= { at: Date.now(), by: (error as Error).message };
      client.socket.destroy();
      // A new connection, with a connect timeout of 3 s as a client would have.
      for (;;) {
        try {
          client = await lineClient(host, port, 3_000);
          break;
        } catch {
          await sleep(100);
        }
      }
    }
  }
  return { slowestMs };
}

/** The probe's last line of output, parsed, once it exited; `onLine` sees every line as it comes. */
async function probeResult(child: ChildProcess, onLine: (line: string) => void = () => {}) {
  const lines: string[] = [];
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      onLine(line);
    }
  });
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`the probe exited ${code}`);
  return JSON.parse(lines.at(-1)!);
}

async function check() {
  const server = echoServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const link = await openSatelliteLink({
    upstreamPort: (server.address() as { port: number }).port,
    delayMs: Number(opt.delay),
    lossPercent: Number(opt.loss),
    rateKbit: Number(opt.rate),
    emulation: opt.relay ? 'relay' : 'auto',
  });
  const probe = (mode: string, ...args: string[]) =>
    link.exec(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--probe', mode, link.host, String(link.port), ...args], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
  try {
    const rtt = await probeResult(probe('rtt', opt.rounds, opt.bulk));
    const cutMs = Number(opt.cut);
    /** One cut, 1 s after the probe's connection is up; times relative to the end of the cut. */
    const cutProbe = async (connections: 'keep' | 'drop', answerMs: number) => {
      let cutEnd = 0;
      const result = await probeResult(probe('cut', String(answerMs), String(cutMs + 12_000)), (line) => {
        if (line.startsWith('{"ready"')) void sleep(1_000).then(() => link.cut(cutMs, { connections }).then(() => (cutEnd = Date.now())));
      });
      return result.lostAt
        ? { lostBy: result.lostBy, noticedAfterCutMs: result.lostAt - cutEnd, resumedAfterCutMs: result.resumedAt - cutEnd }
        : { connectionLost: false, slowestPingMs: result.slowestMs };
    };
    // Kept: TCP carries the connection over the cut; the ping caught in it is late, not lost.
    const kept = await cutProbe('keep', 30_000);
    // Dropped: the probe notices when a ping stays unanswered for 4 s, then reconnects.
    const dropped = await cutProbe('drop', 4_000);
    console.log(
      JSON.stringify(
        {
          emulation: link.emulation,
          link: { delayMs: Number(opt.delay), lossPercent: Number(opt.loss), rateKbit: Number(opt.rate) },
          connectMs: rtt.connectMs,
          firstExchangeMs: rtt.firstExchangeMs,
          rttMs: { median: median(rtt.rtts), min: Math.min(...rtt.rtts), max: Math.max(...rtt.rtts), all: rtt.rtts },
          bulk: { bytes: rtt.bulk.bytes, transferMs: rtt.bulk.transferMs, kbitPerS: round((rtt.bulk.bytes * 8) / rtt.bulk.transferMs) },
          lossesEmulated: link.lossesEmulated(),
          cut: { ms: cutMs, keep: kept, drop: dropped },
        },
        null,
        2,
      ),
    );
  } finally {
    await link.close();
    server.close();
  }
}

if (opt.probe) {
  const [host, port, ...rest] = positionals;
  const result = opt.probe === 'rtt' ? await probeRtt(host, Number(port), Number(rest[0]), Number(rest[1])) : await probeCut(host, Number(port), Number(rest[0]), Number(rest[1]));
  console.log(JSON.stringify(result));
  process.exit(0);
} else {
  await check();
}
