import { Injectable } from '@nestjs/common';
import type { Subscriber } from '../delivery/delivery.service.js';
import type { StreamTransport } from './stream-transport.js';

/** One open stream and what it was opened with. */
export interface StreamConnection {
  transport: StreamTransport;
  clientId: string;
  /** The access token's id, its grant (user tokens only) and the key that signed it: what a revocation names. */
  jti: string;
  grantId?: string;
  kid?: string;
  alive: boolean;
  /** Seconds between its pings: its client's heartbeat, once StreamHeartbeatService has read it (not pinged until then). */
  heartbeat?: number;
  /** The close at the token's expiry (for v2, first the notice before it). */
  expiry?: NodeJS.Timeout;
  subscriber?: Subscriber;
}

/** Connections grouped under a key (a client, a token, a grant, a key). */
class Groups {
  private readonly groups = new Map<string, Set<StreamConnection>>();

  add(key: string | undefined, connection: StreamConnection): void {
    if (key === undefined) return;
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = new Set()));
    group.add(connection);
  }

  delete(key: string | undefined, connection: StreamConnection): void {
    if (key === undefined) return;
    const group = this.groups.get(key);
    if (group?.delete(connection) && group.size === 0) this.groups.delete(key);
  }

  of(key: string): StreamConnection[] {
    return [...(this.groups.get(key) ?? [])];
  }

  count(key: string): number {
    return this.groups.get(key)?.size ?? 0;
  }

  keys(): string[] {
    return [...this.groups.keys()];
  }
}

/** This instance's open streams, findable by whatever a revocation or a cap names. */
@Injectable()
export class ConnectionRegistryService implements Iterable<StreamConnection> {
  private readonly all = new Set<StreamConnection>();
  private readonly byClient = new Groups();
  private readonly byToken = new Groups();
  private readonly byGrant = new Groups();
  private readonly byKey = new Groups();

  add(connection: StreamConnection): void {
    this.all.add(connection);
    this.byClient.add(connection.clientId, connection);
    this.byToken.add(connection.jti, connection);
    this.byGrant.add(connection.grantId, connection);
    this.byKey.add(connection.kid, connection);
  }

  delete(connection: StreamConnection): void {
    if (!this.all.delete(connection)) return;
    this.byClient.delete(connection.clientId, connection);
    this.byToken.delete(connection.jti, connection);
    this.byGrant.delete(connection.grantId, connection);
    this.byKey.delete(connection.kid, connection);
  }

  /** A protocol v2 stream replaced its token: revocations now name the new one. */
  retoken(connection: StreamConnection, names: Pick<StreamConnection, 'jti' | 'grantId' | 'kid'>): void {
    this.byToken.delete(connection.jti, connection);
    this.byGrant.delete(connection.grantId, connection);
    this.byKey.delete(connection.kid, connection);
    Object.assign(connection, names);
    this.byToken.add(connection.jti, connection);
    this.byGrant.add(connection.grantId, connection);
    this.byKey.add(connection.kid, connection);
  }

  has(connection: StreamConnection): boolean {
    return this.all.has(connection);
  }

  get size(): number {
    return this.all.size;
  }

  countOfClient(clientId: string): number {
    return this.byClient.count(clientId);
  }

  ofClient(clientId: string): StreamConnection[] {
    return this.byClient.of(clientId);
  }

  ofToken(jti: string): StreamConnection[] {
    return this.byToken.of(jti);
  }

  ofGrant(grantId: string): StreamConnection[] {
    return this.byGrant.of(grantId);
  }

  ofKey(kid: string): StreamConnection[] {
    return this.byKey.of(kid);
  }

  /** The clients with open streams here. */
  clientIds(): string[] {
    return this.byClient.keys();
  }

  [Symbol.iterator](): Iterator<StreamConnection> {
    return this.all[Symbol.iterator]();
  }
}
