import { Injectable } from '@nestjs/common';
import { actingAs } from '../audit/actor.js';
import { hashClientSecret } from '../clients/client-secret.js';
import { ClientsService, type ClientUpdate } from '../clients/clients.service.js';
import { BearerRejection, bearerTokenOf } from '../bearer/bearer-authenticator.service.js';
import { AppError } from '../common/errors/app-error.js';
import { randomToken } from '../common/crypto/opaque-token.js';
import type { Requester } from '../common/http/requester.js';
import { Env } from '../config/env.js';
import { OAuthError } from '../oauth/oauth-error.js';
import { readClientMetadata, type RegisteredMetadata, toClientMetadata } from './client-metadata.js';

/** The 201 of a registration: the metadata, the secret (once) and how to manage the client. */
export type Registration = RegisteredMetadata & { client_secret?: string; registration_client_uri: string; registration_access_token: string };

/** What the client configuration endpoint answers (RFC 7592 §3): as a registration, never the secret. */
export type ClientConfiguration = RegisteredMetadata & { registration_client_uri: string; registration_access_token: string };

/** Seconds over which REGISTRATION_RATE_LIMIT counts one caller's registrations. */
const BURST_WINDOW_SECONDS = 60;

/**
 * Dynamic client registration (RFC 7591) and the client configuration endpoint (RFC 7592), on the
 * one client registry: a registered client is a client as the CLI makes it, by the same rules.
 * Each client gets a registration access token (256 random bits, stored as its SHA-256 only) that
 * manages that client at its registration_client_uri and is good for nothing else.
 */
@Injectable()
export class RegistrationService {
  constructor(
    private readonly clients: ClientsService,
    private readonly env: Env,
  ) {}

  /** Registers a client for the caller (a `clients:register` token's client), recorded as the caller's. */
  async register(body: unknown, callerId: string, requester: Requester): Promise<Registration> {
    return actingAs({ kind: 'client', clientId: callerId, requester }, () => this.registerAsCaller(body, callerId));
  }

  private async registerAsCaller(body: unknown, callerId: string): Promise<Registration> {
    const dto = await asMetadataError(this.clients.checkNew(readClientMetadata(body, this.env.registrationScopes)));
    const token = randomToken(32);
    const limit = this.env.REGISTRATION_RATE_LIMIT;
    const registered = await asMetadataError(
      this.clients.register(dto, { registrationTokenHash: hashClientSecret(token), registeredBy: callerId }, async (manager, clients) => {
        const recent = await clients.recentRegistrations(manager, callerId, BURST_WINDOW_SECONDS);
        if (recent.count < limit) return;
        const retryAfter = Math.max(1, Math.ceil(recent.oldestLeavesIn));
        throw new OAuthError('slow_down', `this client registered ${limit} clients in the last ${BURST_WINDOW_SECONDS} seconds: register again in ${retryAfter} s`, { status: 429, retryAfter });
      }),
    );
    const { client_secret: secret, ...view } = registered;
    return { ...toClientMetadata(view), ...(secret === undefined ? {} : { client_secret: secret }), ...this.management(view.client_id, token) };
  }

  /** RFC 7592 §2.1. */
  async read(clientId: string, authorization: string | undefined): Promise<ClientConfiguration> {
    const { token } = await this.authorize(clientId, authorization);
    return { ...toClientMetadata(await this.clients.show(clientId)), ...this.management(clientId, token) };
  }

  /** RFC 7592 §2.2: the whole metadata replaces the registered one (a field left out goes back to its default). */
  async replace(clientId: string, authorization: string | undefined, body: unknown, requester: Requester): Promise<ClientConfiguration> {
    const { token } = await this.authorize(clientId, authorization);
    if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
      const { client_id: givenId, client_secret: givenSecret } = body as Record<string, unknown>;
      if (givenId !== clientId) throw new OAuthError('invalid_client_metadata', 'client_id must be given, and be this client\'s');
      if (givenSecret !== undefined && (typeof givenSecret !== 'string' || !(await this.clients.authenticate(clientId, givenSecret)))) {
        throw new OAuthError('invalid_client_metadata', 'client_secret, when given, must be the client\'s current secret');
      }
    }
    const input = readClientMetadata(body, this.env.registrationScopes);
    const defaults = await asMetadataError(this.clients.checkNew(input));
    const update: ClientUpdate = {
      name: defaults.name,
      grants: defaults.grants,
      redirectPatterns: defaults.redirectPatterns,
      scopes: defaults.scopes,
      postLogoutRedirectUris: defaults.postLogoutRedirectUris,
      idTokenSignedResponseAlg: defaults.idTokenSignedResponseAlg,
      tokenEndpointAuthMethod: defaults.tokenEndpointAuthMethod,
    };
    const updated = await actingAs({ kind: 'client', clientId, requester }, () => asMetadataError(this.clients.update(clientId, update)));
    return { ...toClientMetadata(updated), ...this.management(clientId, token) };
  }

  /** RFC 7592 §2.3: as client:delete, its grants revoked and its streams closed on every instance. */
  async delete(clientId: string, authorization: string | undefined, requester: Requester): Promise<void> {
    await this.authorize(clientId, authorization);
    await actingAs({ kind: 'client', clientId, requester }, () => this.clients.delete(clientId));
  }

  /** The client's registration access token, from `Authorization: Bearer`; 401 for any other (RFC 7592 §2: an unknown client too). */
  private async authorize(clientId: string, authorization: string | undefined): Promise<{ token: string }> {
    const token = bearerTokenOf(authorization);
    const client = await this.clients.findByRegistrationToken(clientId, token);
    if (!client?.enabled) throw BearerRejection.invalidToken('the registration access token is not this client\'s, or the client is disabled or deleted');
    return { token };
  }

  private management(clientId: string, token: string) {
    return { registration_client_uri: `${this.env.identityUrl}/sso/register/${clientId}`, registration_access_token: token };
  }
}

/** The registry's refusals in RFC 7591's words: a value it does not accept, a name taken. */
async function asMetadataError<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof AppError && error.code !== 'not_found') throw new OAuthError('invalid_client_metadata', error.message);
    throw error;
  }
}
