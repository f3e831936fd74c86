import { validNotification } from '../factories/notification.factory.js';
import type { Credentials } from './clients.js';
import type { Instance } from './instances.js';
import { keyOf, type Publication } from './publisher.js';
import { type AttemptLog, checkHealth, openStream, publishOnce, requestToken, type Route } from './requests.js';

export interface ProbeOptions {
  instances: Instance[];
  log: AttemptLog;
  intervalMs: number;
  publishToken: string;
  /** Per instance, the recipient its publish probes go to (a subscriber of its own, so they are checked too). */
  publishRecipients: string[];
  /** A client that is never published to: its token and stream probes must not move anyone's cursor. */
  streamClient: Credentials;
  /** A token of `streamClient`, taken before any fault, for the stream probe. */
  streamToken: string;
}

/**
 * Asks every route of every instance that is up, one request at a time per route and instance,
 * every `intervalMs`: publish, client-credentials token, GET /health and the stream upgrade. The
 * answers (status, latency) go to the attempt log with source `probe`. Publish probes are not
 * retried; the ones answered 202 are kept so their delivery is checked like the load's.
 */
export class RouteProbes {
  readonly publications: Publication[] = [];
  private stopped = false;
  private readonly loops: Promise<void>[];

  constructor(private readonly options: ProbeOptions) {
    const routes: Route[] = ['publish', 'token', 'health', 'upgrade'];
    this.loops = options.instances.flatMap((instance, index) => routes.map((route) => this.loop(instance, index, route)));
  }

  async stop() {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  private async loop(instance: Instance, index: number, route: Route) {
    while (!this.stopped) {
      const started = Date.now();
      if (instance.up) await this.probe(instance, index, route);
      await sleep(this.options.intervalMs - (Date.now() - started));
    }
  }

  private async probe(instance: Instance, index: number, route: Route) {
    const { log } = this.options;
    switch (route) {
      case 'publish': {
        const body = validNotification(this.options.publishRecipients[index]);
        const { attempt } = await publishOnce(log, 'probe', instance, this.options.publishToken, body);
        if (attempt.outcome === 202) {
          this.publications.push({ recipient: body.recipient, key: keyOf(body), body, dueAt: attempt.startedAt, acceptedAt: attempt.endedAt, attempts: 1 });
        }
        return;
      }
      case 'token':
        await requestToken(log, 'probe', instance, this.options.streamClient);
        return;
      case 'health':
        await checkHealth(log, 'probe', instance);
        return;
      case 'upgrade': {
        const { stream } = await openStream(log, 'probe', instance, this.options.streamToken);
        stream?.socket.close(1000);
        return;
      }
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(ms, 0)));
