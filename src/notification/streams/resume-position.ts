import type { ResumePosition } from '../delivery/delivery.service.js';

const SEQ = /^(0|[1-9][0-9]{0,15})$/;
const EPOCH = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Where a resuming client says it is: `after` (a WebSocket v2 query, or an SSE `Last-Event-ID`
 * or query) and `epoch`. Values the service could never have sent are refused with the reason,
 * before anything starts; an absent one is no position.
 */
export function readResumePosition(after: string | undefined, epoch: string | undefined): ResumePosition | { error: string } {
  if (after !== undefined && (!SEQ.test(after) || !Number.isSafeInteger(Number(after)))) return { error: 'after must be a notification seq (a non-negative integer)' };
  if (epoch !== undefined && !EPOCH.test(epoch)) return { error: 'epoch must be an epoch the service sent (letters, digits, - and _)' };
  return { ...(after !== undefined && { after: Number(after) }), ...(epoch !== undefined && { epoch }) };
}
