import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import pg from 'pg';
import { KeysService } from '../../../src/keys/keys.service.js';
import { clientToken, publish, SUBSCRIBE_SCOPE, validNotification } from '../../factories/notification.factory.js';
import { createClient, type TestClient } from '../../factories/oauth.factory.js';
import { flipSignatureByte } from '../../factories/state.factory.js';
import { eventually, openV2 } from '../../factories/stream-clients.js';
import type { World } from './world.js';

/**
 * A client of its own for each fuzz run of the notification streams, so that what one run
 * confirmed never hides what another must get again: its notifications, published interleaved
 * with the neighbour's (the world's subscriber: seqs of another client, below and above its
 * own), its token, and the check that ends every run — a new plain protocol v2 connection gets
 * again every notification the run did not validly confirm.
 *
 * Placeholders of a run (written `{{r_…}}` and filled by `fill`; generated text that only looks
 * like a placeholder is sent as it is): `r_token`, `r_forged_token` (the same with its signature
 * changed), `r_publish_token` (the publisher's); `r_first` and `r_last` (its own first and last
 * seq, 0 without any), `r_beyond` (no notification has it yet), `r_neighbour_below` and
 * `r_neighbour_above` (the neighbour's nearest seqs below and above its last one: another
 * client's, inside or past its own range); `r_epoch` (the database's).
 */

/** Who each notification published before the run goes to, in publish order. */
export type PublishPlan = ('mine' | 'neighbour')[];

/** One notification of the run's client: its seq and what identifies it. */
export interface Published {
  seq: number;
  correlationId: string;
}

/** How long a check waits for what must arrive. */
const ARRIVAL_MS = 3_000;
const RUN_PLACEHOLDER = /\{\{(r_\w+)\}\}/g;

export class Recipients {
  private db?: pg.Client;
  private epoch?: string;

  constructor(private readonly world: World) {}

  /** A new client, with the plan's notifications stored for it and its neighbour, and a token. */
  async fresh(plan: PublishPlan): Promise<Recipient> {
    const { app } = this.world;
    const client = await createClient(app, { grants: ['client_credentials'], scopes: [SUBSCRIBE_SCOPE] });
    const recipient = new Recipient(this, this.world, client, await clientToken(app, client));
    for (const to of plan) {
      if (to === 'mine') await recipient.publish();
      else await this.publishTo(this.world.subscriber.id);
    }
    return recipient;
  }

  async close(): Promise<void> {
    await this.db?.end();
  }

  /** Publishes one notification to `recipientId`; its seq, read back from the table. */
  async publishTo(recipientId: string): Promise<Published> {
    const body = validNotification(recipientId);
    const answer = await publish(this.world.app, await this.world.fill('{{publish_token}}'), body);
    if (answer.status !== 202) throw new Error(`publish answered ${answer.status}: ${answer.text}`);
    const [row] = await this.query<{ seq: string }>('SELECT seq FROM notifications WHERE id = $1', [answer.body.id]);
    return { seq: Number(row.seq), correlationId: body.correlationId };
  }

  async databaseEpoch(): Promise<string> {
    this.epoch ??= (await this.query<{ epoch: string }>('SELECT epoch FROM notification_epoch'))[0].epoch;
    return this.epoch;
  }

  async query<T extends object>(sql: string, params: unknown[] = []): Promise<T[]> {
    if (!this.db) {
      this.db = new pg.Client({ connectionString: this.world.app.databaseUrl });
      await this.db.connect();
    }
    return (await this.db.query(sql, params)).rows as T[];
  }
}

export class Recipient {
  /** Its notifications, oldest first. */
  readonly published: Published[] = [];

  constructor(
    private readonly recipients: Recipients,
    private readonly world: World,
    readonly client: TestClient,
    readonly token: string,
  ) {}

  get id(): string {
    return this.client.id;
  }

  get latestSeq(): number {
    return this.published.at(-1)?.seq ?? 0;
  }

  async publish(): Promise<Published> {
    const published = await this.recipients.publishTo(this.id);
    this.published.push(published);
    return published;
  }

  /** The correlation ids of its notifications after `seq`: what a connection must get when everything up to `seq` was confirmed. */
  after(seq: number): string[] {
    return this.published.filter((item) => item.seq > seq).map((item) => item.correlationId);
  }

  /**
   * The most a resume position (`after`, `Last-Event-ID`) may confirm: the highest of `positions`
   * that is a seq this client had (a higher one is another database's, and confirms nothing). Read
   * leniently — any digits — so the bound never asks for less than the contract allows.
   */
  confirmableBy(positions: string[]): number {
    const seqs = positions.map((text) => text.trim()).filter((text) => /^[0-9]+$/.test(text)).map(Number);
    return Math.max(0, ...seqs.filter((seq) => seq <= this.latestSeq));
  }

  /** An access token signed with the service's own key: by default one the stream accepts for this client; `claims` and `header` change it. */
  async forgeToken(claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
    const { app } = this.world;
    const key = await app.get(KeysService).signingKey();
    const now = Math.floor(Date.now() / 1000);
    const payload = { iss: app.env.identityUrl, sub: this.id, aud: app.env.apiUrl, client_id: this.id, scope: SUBSCRIBE_SCOPE, jti: randomUUID(), iat: now, exp: now + 600, ...claims };
    return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header }).sign(key.privateKey);
  }

  /** The run's placeholders in every string of `value` filled. */
  async fill<T>(value: T): Promise<T> {
    const values = await this.placeholderValues();
    const fill = (item: unknown): unknown => {
      if (typeof item === 'string') return item.replace(RUN_PLACEHOLDER, (_, name: string) => values[name] ?? `{{${name}}}`);
      if (Array.isArray(item)) return item.map(fill);
      if (item !== null && typeof item === 'object' && !ArrayBuffer.isView(item)) {
        // Own keys only, "__proto__" included as a plain key.
        const copy: Record<string, unknown> = {};
        for (const [key, inner] of Object.entries(item)) Object.defineProperty(copy, key, { value: fill(inner), enumerable: true, writable: true, configurable: true });
        return copy;
      }
      return item;
    };
    return fill(value) as T;
  }

  private async placeholderValues(): Promise<Record<string, string>> {
    const own = this.published.map((item) => item.seq);
    const [{ max, below, above }] = await this.recipients.query<{ max: string | null; below: string | null; above: string | null }>(
      `SELECT (SELECT max(seq) FROM notifications) AS max,
         (SELECT max(seq) FROM notifications WHERE recipient = $1 AND seq < $2) AS below,
         (SELECT min(seq) FROM notifications WHERE recipient = $1 AND seq > $2) AS above`,
      [this.world.subscriber.id, own.at(-1) ?? 0],
    );
    return {
      r_token: this.token,
      r_forged_token: flipSignatureByte(this.token),
      r_publish_token: await this.world.fill('{{publish_token}}'),
      r_first: String(own[0] ?? 0),
      r_last: String(own.at(-1) ?? 0),
      r_beyond: String(Number(max ?? 0) + 1),
      r_neighbour_below: String(below ?? 1),
      r_neighbour_above: String(above ?? Number(max ?? 0) + 1),
      r_epoch: await this.recipients.databaseEpoch(),
    };
  }

  /**
   * The key property of every stream run: a new plain v2 connection of this client (no position)
   * gets every one of its notifications after `confirmed` (what the run validly confirmed), and
   * nothing of another client's.
   */
  async expectReplayedAfter(confirmed: number, what: string): Promise<void> {
    const expected = this.after(confirmed);
    const stream = await openV2(this.world.app.baseUrl, this.token);
    try {
      const received = () => stream.notifications().map((message) => String(message.data?.correlationId));
      try {
        await eventually(() => expected.every((id) => received().includes(id)) || stream.closeInfo !== undefined, ARRIVAL_MS, 'the replay');
      } catch {
        // Reported below with what did arrive.
      }
      const missing = expected.filter((id) => !received().includes(id));
      if (missing.length > 0) {
        const seqs = this.published.filter((item) => missing.includes(item.correlationId)).map((item) => item.seq);
        throw new Error(
          `after ${what}, a new connection did not get again ${missing.length} notification(s) never validly confirmed (seqs ${seqs.join(', ')}; confirmed up to ${confirmed}; ` +
            `its seqs ${this.published.map((item) => item.seq).join(', ') || 'none'}; received ${received().length}${stream.closeInfo ? `, closed ${stream.closeInfo.code}` : ''})`,
        );
      }
      const own = new Set(this.published.map((item) => item.correlationId));
      const foreign = received().filter((id) => !own.has(id));
      if (foreign.length > 0) throw new Error(`after ${what}, a new connection got ${foreign.length} notification(s) of another client`);
    } finally {
      stream.close();
    }
  }
}
