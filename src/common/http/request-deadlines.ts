import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { RequestDeadlineError } from '../errors/temporarily-unavailable.js';

/** How often open requests are checked: the 503 comes at most a tenth of the timeout (and at most a second) late. */
export const sweepIntervalMs = (timeoutMs: number) => Math.min(1000, Math.ceil(timeoutMs / 10));

/**
 * A request still unanswered after `timeoutMs` gets a 503 with Retry-After in its route's error
 * format (the error goes through the exception filters). Its database work is bounded by the
 * pool's timeouts already; this bounds what they cannot see, such as a server that vanished
 * without closing its connections.
 *
 * Open requests wait in arrival order and one sweep answers the late ones at the front: a timer set
 * and cleared per request cost a tenth of a code poll.
 */
export function answerLateRequests(fastify: FastifyInstance, timeoutMs: number): void {
  // A Map keeps insertion order, and the clock is monotonic: the oldest request is always first.
  const openSince = new Map<FastifyReply, number>();
  fastify.addHook('onRequest', (_request, reply, done) => {
    openSince.set(reply, performance.now());
    done();
  });
  fastify.addHook('onResponse', (_request, reply, done) => {
    openSince.delete(reply);
    done();
  });
  const sweep = setInterval(() => {
    const startedBy = performance.now() - timeoutMs;
    for (const [reply, since] of openSince) {
      if (since > startedBy) break;
      openSince.delete(reply);
      if (!reply.sent) reply.send(new RequestDeadlineError(timeoutMs));
    }
  }, sweepIntervalMs(timeoutMs));
  sweep.unref();
  fastify.addHook('onClose', (_instance, done) => {
    clearInterval(sweep);
    done();
  });
}
