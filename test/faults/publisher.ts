import { type PublishBody, validNotification } from '../factories/notification.factory.js';
import type { Instance } from './instances.js';
import { type AttemptLog, publishOnce } from './requests.js';

/** One notification of the load and what became of it. */
export interface Publication {
  recipient: string;
  /** `correlationId/status`, as the mailbox keys arrivals. */
  key: string;
  body: PublishBody;
  /** When it was due by the steady rate. */
  dueAt: number;
  /** When the 202 came (undefined: never accepted). */
  acceptedAt?: number;
  attempts: number;
  /** A 4xx: the service refused the request itself (a test failure, never retried). */
  refused?: { status: number; body: string };
}

export interface PublisherOptions {
  instances: Instance[];
  token: string;
  recipients: string[];
  count: number;
  perSecond: number;
  log: AttemptLog;
  /** A publish still not accepted after this long is given up (and reported). */
  giveUpAfterMs: number;
}

/** Pause before a retry, so a down service is not hammered. */
const RETRY_PAUSE_MS = 200;

export const keyOf = (body: PublishBody) => `${body.correlationId}/${body.status}`;

/**
 * Publishes `count` notifications at a steady rate, round-robin over the recipients. Each
 * recipient's publishes are sequential (the next starts after the previous got its 202), so its
 * publish order is well defined. A failed request (no answer, timeout, 5xx) is retried with the
 * same body on the next instance until 202: the service's dedupe makes the retry idempotent.
 */
export class Publisher {
  readonly publications: Publication[];
  readonly done: Promise<void>;
  private stopped = false;

  constructor(private readonly options: PublisherOptions) {
    const start = Date.now();
    this.publications = Array.from({ length: options.count }, (_, index) => {
      const recipient = options.recipients[index % options.recipients.length];
      const body = validNotification(recipient);
      return { recipient, key: keyOf(body), body, dueAt: start + (index * 1000) / options.perSecond, attempts: 0 };
    });
    this.done = Promise.all(options.recipients.map((recipient, index) => this.publishInOrder(recipient, index))).then(() => {});
  }

  /** Ends the load early (cleanup after a failure). */
  stop() {
    this.stopped = true;
  }

  get accepted(): Publication[] {
    return this.publications.filter((publication) => publication.acceptedAt !== undefined);
  }

  private async publishInOrder(recipient: string, recipientIndex: number) {
    // Recipients start on different instances, like clients behind a load balancer.
    let instanceIndex = recipientIndex % this.options.instances.length;
    for (const publication of this.publications.filter((candidate) => candidate.recipient === recipient)) {
      await sleep(publication.dueAt - Date.now());
      const giveUpAt = Date.now() + this.options.giveUpAfterMs;
      while (!this.stopped && Date.now() < giveUpAt) {
        publication.attempts++;
        const { attempt, text } = await publishOnce(this.options.log, 'publisher', this.options.instances[instanceIndex], this.options.token, publication.body);
        if (attempt.outcome === 202) {
          publication.acceptedAt = attempt.endedAt;
          break;
        }
        if (typeof attempt.outcome === 'number' && attempt.outcome >= 400 && attempt.outcome < 500) {
          publication.refused = { status: attempt.outcome, body: text };
          break;
        }
        instanceIndex = (instanceIndex + 1) % this.options.instances.length;
        await sleep(RETRY_PAUSE_MS);
      }
      if (this.stopped) return;
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(ms, 0)));
