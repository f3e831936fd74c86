import { PUBLISH_SCOPE } from '../factories/notification.factory.js';
import { checkDelivery, waitForDelivery } from './checker.js';
import { type Credentials, createClients } from './clients.js';
import { createCluster, type OwnedCluster } from './cluster.js';
import { type Instance, startInstances } from './instances.js';
import { RouteProbes } from './probes.js';
import { Publisher } from './publisher.js';
import { type FaultWindow, publishReport, type ScenarioReport, summarise } from './report.js';
import { AttemptLog, requestToken } from './requests.js';
import { currentScale, type Scale } from './scale.js';
import type { SubscriberKind } from './stream-kinds.js';
import { Mailbox, type ReconnectDelay, Subscriber } from './subscribers.js';

export interface WorldOptions {
  /** Subscriber clients the load publishes to. */
  recipients: number;
  /** Streams per subscriber client (the storm opens several per client). */
  connectionsPerRecipient?: number;
  /**
   * How the subscriber clients read (stream-kinds.ts), dealt round robin over the clients: every
   * stream of a client is of its kind. Default: all v1.
   */
  kinds?: readonly SubscriberKind[];
  /** `spread`: subscribers alternate between instances; `first`: all start on the first instance. */
  placement?: 'spread' | 'first';
  reconnectDelay?: ReconnectDelay;
  /** Settings of both service instances, on top of the defaults. */
  env?: Record<string, string>;
}

/** How often each route of each instance is probed. */
const PROBE_INTERVAL_MS = 250;
/** Subscribers connect this many at a time when the world is set up. */
const CONNECT_CHUNK = 100;

/**
 * Everything a fault scenario runs against: its own PostgreSQL cluster, two service processes on
 * it, the clients (made with the CLI), subscribers reading every stream, and the record of every
 * request and every message. `destroy()` removes it all, whatever state it is in.
 */
export class World {
  readonly scale: Scale = currentScale();
  readonly log = new AttemptLog();
  readonly mailbox = new Mailbox();
  cluster!: OwnedCluster;
  instances: Instance[] = [];
  publisherToken!: string;
  recipients: Credentials[] = [];
  subscribers: Subscriber[] = [];
  /** Each subscriber client's kind. */
  readonly kindOf = new Map<string, SubscriberKind>();
  /** Per instance, the client its publish probes go to. */
  private probeRecipients: Credentials[] = [];
  private streamProbeClient!: Credentials;
  private streamProbeToken!: string;
  private probes?: RouteProbes;
  private publishers: Publisher[] = [];

  static async create(options: WorldOptions): Promise<World> {
    const world = new World();
    try {
      await world.setUp(options);
    } catch (error) {
      await world.destroy();
      throw error;
    }
    return world;
  }

  private async setUp(options: WorldOptions) {
    const timings: string[] = [];
    let phaseStart = Date.now();
    const phase = (name: string) => {
      timings.push(`${name} ${((Date.now() - phaseStart) / 1000).toFixed(1)} s`);
      phaseStart = Date.now();
    };
    this.cluster = await createCluster();
    phase('cluster');
    this.instances = await startInstances(this.cluster.databaseUrl, 2, options.env);
    phase('instances');
    const [publisher, streamProbe, ...subscribers] = await createClients(this.cluster.databaseUrl, [
      { name: 'faults-publisher', scope: PUBLISH_SCOPE },
      { name: 'faults-stream-probe' },
      ...this.instances.map((instance) => ({ name: `faults-probe-recipient-${instance.name}` })),
      ...Array.from({ length: options.recipients }, (_, index) => ({ name: `faults-subscriber-${index}` })),
    ]);
    this.probeRecipients = subscribers.slice(0, this.instances.length);
    this.recipients = subscribers.slice(this.instances.length);
    this.streamProbeClient = streamProbe;
    this.publisherToken = await this.token(publisher, PUBLISH_SCOPE);
    this.streamProbeToken = await this.token(streamProbe);
    phase(`${subscribers.length + 2} clients (CLI)`);

    const delay = options.reconnectDelay ?? { baseMs: this.scale.reconnectDelayMs, jitterMs: this.scale.reconnectJitterMs };
    const perRecipient = options.connectionsPerRecipient ?? 1;
    const kinds = options.kinds ?? ['v1'];
    this.subscribers = [...this.probeRecipients, ...this.recipients].flatMap((client, clientIndex) => {
      const kind = kinds[clientIndex % kinds.length];
      this.kindOf.set(client.id, kind);
      return Array.from({ length: perRecipient }, (_, connection) => {
        const preferred = options.placement === 'first' ? 0 : (clientIndex * perRecipient + connection) % this.instances.length;
        return new Subscriber(client, this.instances, preferred, delay, this.log, this.mailbox, kind);
      });
    });
    for (let from = 0; from < this.subscribers.length; from += CONNECT_CHUNK) {
      const chunk = this.subscribers.slice(from, from + CONNECT_CHUNK);
      for (const subscriber of chunk) subscriber.start();
      await waitUntil(() => chunk.every((subscriber) => subscriber.openOn !== undefined), 60_000, 'subscribers to connect');
    }
    phase(`${this.subscribers.length} streams`);
    console.log(`set-up (${this.scale.name}): ${timings.join(', ')}`);
  }

  /** A client-credentials token from the first instance (accepted by all: same issuer and audience). */
  private async token(client: Credentials, scope?: string): Promise<string> {
    const { attempt, token } = await requestToken(new AttemptLog(), 'probe', this.instances[0], client, scope);
    if (!token) throw new Error(`token request for ${client.id} answered ${attempt.outcome}`);
    return token;
  }

  /**
   * One more stream for each of `clients`, started now, the i-th on instance (i + 1) mod 2: with
   * `spread` placement, the other instance than the client's first stream. Stopped with the others.
   */
  addStreams(clients: Credentials[]): Subscriber[] {
    const delay = { baseMs: this.scale.reconnectDelayMs, jitterMs: this.scale.reconnectJitterMs };
    const added = clients.map((client, index) => new Subscriber(client, this.instances, (index + 1) % this.instances.length, delay, this.log, this.mailbox, this.kindOf.get(client.id)));
    this.subscribers.push(...added);
    for (const subscriber of added) subscriber.start();
    return added;
  }

  /** Subscribers whose stream is open on `instance` right now. */
  connectedTo(instance: Instance): number {
    return this.subscribers.filter((subscriber) => subscriber.openOn === instance.name).length;
  }

  /** Starts a run: route probes and the publish load (the scale's count and rate over all recipients). */
  beginRun(load: { count?: number; perSecond?: number } = {}): Run {
    const startedAt = Date.now();
    this.probes = new RouteProbes({
      instances: this.instances,
      log: this.log,
      intervalMs: PROBE_INTERVAL_MS,
      publishToken: this.publisherToken,
      publishRecipients: this.probeRecipients.map((client) => client.id),
      streamClient: this.streamProbeClient,
      streamToken: this.streamProbeToken,
    });
    const publisher = new Publisher({
      instances: this.instances,
      token: this.publisherToken,
      recipients: this.recipients.map((client) => client.id),
      count: load.count ?? this.scale.publishes,
      perSecond: load.perSecond ?? this.scale.publishesPerSecond,
      log: this.log,
      giveUpAfterMs: 120_000,
    });
    this.publishers.push(publisher);
    return { startedAt, publisher, probes: this.probes, plannedMs: ((load.count ?? this.scale.publishes) * 1000) / (load.perSecond ?? this.scale.publishesPerSecond) };
  }

  /**
   * Ends a run: waits (bounded) for the load to be accepted and delivered, stops the probes, checks
   * the guarantee, prints the tables and writes the JSON report.
   */
  async finishRun(scenario: string, run: Run, fault: FaultWindow, extra: Record<string, unknown> = {}): Promise<ScenarioReport> {
    await withTimeout(run.publisher.done, run.plannedMs + 120_000);
    run.publisher.stop();
    const publications = () => [...run.publisher.publications, ...run.probes.publications];
    await waitForDelivery(publications, this.mailbox, 60_000);
    await run.probes.stop();
    // A publish probe under way when they stop is answered meanwhile: its notification is on its way too.
    await waitForDelivery(publications, this.mailbox, 60_000);
    const report = summarise({
      scenario,
      scale: this.scale.name,
      startedAt: run.startedAt,
      attempts: this.log.attempts.filter((attempt) => attempt.startedAt >= run.startedAt),
      load: run.publisher.publications,
      delivery: checkDelivery(publications(), this.mailbox, this.subscribers, run.startedAt),
      fault,
      extra: { 'unreadable messages': this.mailbox.unreadable, ...extra },
    });
    await publishReport(report);
    return report;
  }

  /** Stops everything it started; each step runs even when an earlier one fails. */
  async destroy() {
    for (const publisher of this.publishers) publisher.stop();
    const steps = [
      () => this.probes?.stop(),
      () => Promise.all(this.subscribers.map((subscriber) => subscriber.stop())),
      () => Promise.all(this.instances.map((instance) => instance.stop('SIGKILL'))),
      () => this.cluster?.destroy(),
    ];
    for (const step of steps) {
      try {
        await step();
      } catch (error) {
        console.error(`cleanup step failed: ${(error as Error).message}`);
      }
    }
  }
}

export interface Run {
  startedAt: number;
  publisher: Publisher;
  probes: RouteProbes;
  /** How long the load takes at its steady rate. */
  plannedMs: number;
}

/** Waits for `promise`, or `ms` at most (its outcome is then ignored). */
async function withTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(ms, 0)));

/** Polls `condition` until it holds; throws after `timeoutMs` naming `what`. */
export async function waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}
