import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestDeadlineError } from '../../../src/common/errors/temporarily-unavailable.js';
import { answerLateRequests, sweepIntervalMs } from '../../../src/common/http/request-deadlines.js';

const TIMEOUT_MS = 300;

/** A real server with the deadline; its error handler answers a deadline 503 as the service's filters do. */
async function serverWithDeadline(routes: (app: FastifyInstance) => void) {
  const app = Fastify();
  answerLateRequests(app, TIMEOUT_MS);
  app.setErrorHandler((error, _request, reply) => {
    if (error instanceof RequestDeadlineError) return reply.code(503).header('retry-after', '1').send({ message: error.message });
    return reply.code(500).send({ message: 'unexpected' });
  });
  routes(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  opened.push(app);
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

const opened: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of opened.splice(0)) await app.close();
});

const timed = async (url: string) => {
  const started = performance.now();
  const response = await fetch(url);
  return { status: response.status, body: await response.text(), ms: performance.now() - started };
};

describe('request deadlines', () => {
  it('answers a request still open after the timeout 503, at most one sweep late', async () => {
    const base = await serverWithDeadline((app) => app.get('/hang', () => new Promise(() => {})));
    const answer = await timed(`${base}/hang`);
    expect(answer.status).toBe(503);
    expect(answer.body).toContain(`not answered within ${TIMEOUT_MS} ms`);
    expect(answer.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    // Generous against a slow machine: what matters is that the answer is bounded.
    expect(answer.ms).toBeLessThan(TIMEOUT_MS + sweepIntervalMs(TIMEOUT_MS) + 1000);
  });

  it('leaves requests answered in time alone, also when a late one sits in front of them', async () => {
    const base = await serverWithDeadline((app) => {
      app.get('/hang', () => new Promise(() => {}));
      app.get('/slowish', async () => {
        await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS / 2));
        return { ok: true };
      });
    });
    const late = timed(`${base}/hang`);
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS / 2));
    const inTime = await Promise.all([timed(`${base}/slowish`), timed(`${base}/slowish`)]);
    expect(inTime.map((answer) => [answer.status, answer.body])).toEqual([
      [200, '{"ok":true}'],
      [200, '{"ok":true}'],
    ]);
    expect((await late).status).toBe(503);
  });

  it('does not answer twice when the handler finishes after the deadline', async () => {
    let finished = false;
    const base = await serverWithDeadline((app) =>
      app.get('/late', async () => {
        await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 3));
        finished = true;
        return { ok: true };
      }),
    );
    expect((await timed(`${base}/late`)).status).toBe(503);
    await expect.poll(() => finished, { timeout: TIMEOUT_MS * 6 }).toBe(true);
    // The handler's late answer went nowhere, and the server serves on.
    expect((await timed(`${base}/late`)).status).toBe(503);
  });

  it('sweeps a tenth of the timeout apart, and at least once a second', () => {
    expect(sweepIntervalMs(1000)).toBe(100);
    expect(sweepIntervalMs(10_000)).toBe(1000);
    expect(sweepIntervalMs(600_000)).toBe(1000);
  });
});
