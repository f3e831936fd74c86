import { performance } from 'node:perf_hooks';
import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RequestDeadlineError } from '../errors/temporarily-unavailable.js';

/** What a handler may ask of its request's deadline. */
export interface AnswerDeadline {
  /**
   * Runs `work` (a commit whose effect only this request's answer delivers: a consumed code, a
   * rotated refresh token) with the deadline held off, so the 503 that invites a retry never
   * comes after such a commit; once the 503 was sent, `work` is not started. The hold is bounded
   * by the database's own timeouts (connection, statement, lock), which end `work` with a 503 of
   * their own, before anything committed, and by `signal()` for what `work` asks of anything else.
   */
  commit<T>(work: () => Promise<T>): Promise<T>;
  /**
   * Aborts when the request's time is up (undefined: no deadline). A call to another server (an
   * identity provider) that `commit` holds stops then, so its work ends inside the deadline or is
   * given up before anything of it is committed.
   */
  signal(): AbortSignal | undefined;
}

/** For work outside a request with a deadline (the CLI, a test of a service). */
export const NO_DEADLINE: AnswerDeadline = { commit: (work) => work(), signal: () => undefined };

const DEADLINE = Symbol('voyage.deadline');

/** The request's deadline, as a handler parameter. */
export const Deadline = createParamDecorator(
  (_data: unknown, context: ExecutionContext): AnswerDeadline =>
    (context.switchToHttp().getRequest<FastifyRequest>() as unknown as Record<symbol, AnswerDeadline | undefined>)[DEADLINE] ?? NO_DEADLINE,
);

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
  const committing = new Set<FastifyReply>();
  fastify.addHook('onRequest', (request, reply, done) => {
    const since = performance.now();
    openSince.set(reply, since);
    (request as unknown as Record<symbol, AnswerDeadline>)[DEADLINE] = {
      signal: () => AbortSignal.timeout(Math.max(0, Math.ceil(since + timeoutMs - performance.now()))),
      async commit(work) {
        if (reply.sent) throw new RequestDeadlineError(timeoutMs);
        committing.add(reply);
        try {
          return await work();
        } finally {
          committing.delete(reply);
        }
      },
    };
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
      if (committing.has(reply)) continue; // answered by its handler once the commit is decided
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
