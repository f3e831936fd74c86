import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable } from '@nestjs/common';
import * as oidc from 'openid-client';
import { Env } from '../config/env.js';
import { type IdentityProviderEntity, secretContext } from './identity-provider.entity.js';
import { UpstreamFailure } from './upstream-failure.js';
import { UpstreamVaultService } from './upstream-vault.service.js';

/** How long a provider's discovery document is trusted before it is fetched again. */
const DISCOVERY_MAX_AGE_MS = 3600_000;

/** A loopback issuer may be plain http (development, tests); every other one must be https. */
export function isLoopback(url: URL): boolean {
  return ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
}

interface CachedConfiguration {
  configuration: Promise<oidc.Configuration>;
  /** The registration it was made from: an idp:update or a rotated secret makes a new one. */
  updatedAt: number;
  fetchedAt: number;
}

/**
 * The service as a relying party (openid-client 6) to each registered provider: one
 * Configuration per provider, its discovery document cached for an hour and its JWKS cached by
 * openid-client (refetched on an unknown `kid`, one request at a time). Every request to a
 * provider is bounded by IDP_HTTP_TIMEOUT_MS, and a call by the deadline of the request it serves;
 * ID tokens are checked within IDP_CLOCK_TOLERANCE.
 */
@Injectable()
export class UpstreamClientsService {
  private readonly cache = new Map<string, CachedConfiguration>();
  /** Where each provider's authorization endpoint is, once known: pages allow their forms to lead there. */
  private readonly authorizationOrigins = new Map<string, string>();

  constructor(
    private readonly env: Env,
    private readonly vault: UpstreamVaultService,
  ) {}

  /**
   * The provider's discovery document, fetched and checked (its issuer must be `issuer` exactly),
   * as for a registration: an UpstreamFailure saying what is wrong otherwise.
   */
  async check(issuer: string, clientId: string, secret: string | null): Promise<oidc.ServerMetadata> {
    const metadata = (await this.discover(issuer, clientId, secret)).serverMetadata();
    // Exactly as typed: users are linked by it, and a trailing slash makes another issuer (OpenID Connect Discovery §4.3).
    if (metadata.issuer !== issuer) throw UpstreamFailure.invalid(`its discovery document names the issuer ${metadata.issuer}, not ${issuer} as given`);
    return metadata;
  }

  /** The provider's Configuration, from cache while fresh. A failed discovery is not cached. */
  configuration(provider: IdentityProviderEntity): Promise<oidc.Configuration> {
    const cached = this.cache.get(provider.name);
    const now = Date.now();
    if (cached && cached.updatedAt === provider.updatedAt.getTime() && now - cached.fetchedAt < DISCOVERY_MAX_AGE_MS) return cached.configuration;
    const secret = provider.clientSecretSealed ? this.vault.open(secretContext(provider.name), provider.clientSecretSealed) : null;
    const configuration = this.discover(provider.issuer, provider.clientId, secret);
    const entry = { configuration, updatedAt: provider.updatedAt.getTime(), fetchedAt: now };
    this.cache.set(provider.name, entry);
    configuration.then(
      (ready) => this.authorizationOrigins.set(provider.name, new URL(ready.serverMetadata().authorization_endpoint!).origin),
      () => {
        if (this.cache.get(provider.name) === entry) this.cache.delete(provider.name);
      },
    );
    return configuration;
  }

  /**
   * The Configuration for sending a browser to the provider, once the provider answers: a cached
   * one would send it to a provider that went down since, and the browser would show its own
   * "This site can't be reached" where the service's 503 page belongs. A fresh discovery is that
   * proof already; with a cached one, the discovery document is fetched again (the provider's
   * cheapest request, within IDP_HTTP_TIMEOUT_MS). An UpstreamFailure `unreachable` otherwise.
   */
  async configurationToVisit(provider: IdentityProviderEntity): Promise<oidc.Configuration> {
    const cached = this.cache.has(provider.name);
    const configuration = await this.configuration(provider);
    if (cached) await this.probe(provider.issuer);
    return configuration;
  }

  private async probe(issuer: string): Promise<void> {
    const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    let status: number;
    try {
      const response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(this.env.IDP_HTTP_TIMEOUT_MS) });
      status = response.status;
      await response.body?.cancel();
    } catch {
      throw UpstreamFailure.unreachable('it did not answer in time or refused the connection');
    }
    if (status >= 500) throw UpstreamFailure.unreachable(`it answered HTTP ${status}`);
  }

  knownAuthorizationOrigin(name: string): string | undefined {
    return this.authorizationOrigins.get(name);
  }

  /**
   * The longest one call() takes: a rediscovery, the call itself and a JWKS fetch, each bounded
   * by IDP_HTTP_TIMEOUT_MS, and a second to spare. A lease held for a call lasts this long, so
   * one left by a crash runs out soon after.
   */
  get callLeaseSeconds(): number {
    return Math.ceil((3 * this.env.IDP_HTTP_TIMEOUT_MS) / 1000) + 1;
  }

  /**
   * Runs one call to the provider, its failures said as UpstreamFailure. `within` (a request's
   * deadline) bounds it as a whole, the wait for a discovery under way included: its requests
   * are aborted then, and it fails as `unreachable`.
   */
  async call<T>(provider: IdentityProviderEntity, action: (configuration: oidc.Configuration) => Promise<T>, within?: AbortSignal): Promise<T> {
    try {
      // A discovery is shared by every caller (and cached): only this caller stops waiting for it.
      const configuration = await untilAborted(this.configuration(provider), within);
      return await callDeadline.run(within, () => action(configuration));
    } catch (error) {
      throw UpstreamFailure.from(error);
    }
  }

  private async discover(issuer: string, clientId: string, secret: string | null): Promise<oidc.Configuration> {
    const url = new URL(issuer);
    const insecure = url.protocol === 'http:' && isLoopback(url);
    const timeoutMs = this.env.IDP_HTTP_TIMEOUT_MS;
    const boundedFetch: oidc.CustomFetch = (input, init) =>
      fetch(input, { ...init, signal: AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs), callDeadline.getStore()].filter(Boolean) as AbortSignal[]) });
    const options: oidc.DiscoveryRequestOptions = {
      execute: insecure ? [oidc.allowInsecureRequests] : [],
      timeout: Math.ceil(timeoutMs / 1000),
      [oidc.customFetch]: boundedFetch,
    };
    let found: oidc.Configuration;
    try {
      found = await oidc.discovery(url, clientId, undefined, oidc.None(), options);
    } catch (error) {
      throw UpstreamFailure.from(error);
    }
    const metadata = found.serverMetadata();
    checkMetadata(metadata);
    const configuration = new oidc.Configuration(metadata, clientId, { [oidc.clockTolerance]: this.env.IDP_CLOCK_TOLERANCE }, secret === null ? oidc.None() : clientAuthentication(metadata, secret));
    // Bounded by boundedFetch alone: openid-client's own timeout gives each call a new AbortSignal,
    // and oauth4webapi shares a pending JWKS request only with calls of the same signal, so
    // sign-ins hitting an unknown kid together would each fetch the JWKS (no single flight).
    configuration.timeout = 0;
    configuration[oidc.customFetch] = boundedFetch;
    if (insecure) oidc.allowInsecureRequests(configuration);
    // openid-client would trust the TLS channel for the ID token of a code exchange (OpenID Connect
    // Core §3.1.3.7 ¶6); its signature is checked against the provider's JWKS all the same.
    oidc.enableNonRepudiationChecks(configuration);
    return configuration;
  }
}

/** The deadline of the call() a provider request is made for (set around its action only). */
const callDeadline = new AsyncLocalStorage<AbortSignal | undefined>();

/** `promise`, or its signal's abort reason once that comes first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/** client_secret_basic unless the provider says it only takes client_secret_post (RFC 8414 §2: basic is the default). */
function clientAuthentication(metadata: oidc.ServerMetadata, secret: string): oidc.ClientAuth {
  const supported = metadata.token_endpoint_auth_methods_supported;
  return supported && !supported.includes('client_secret_basic') && supported.includes('client_secret_post') ? oidc.ClientSecretPost(secret) : oidc.ClientSecretBasic(secret);
}

/**
 * What the round trip needs of a discovery document, checked at registration and at every
 * rediscovery (a provider may change it): an UpstreamFailure saying what is missing.
 */
function checkMetadata(metadata: oidc.ServerMetadata): void {
  const endpoints = { authorization_endpoint: metadata.authorization_endpoint, token_endpoint: metadata.token_endpoint, jwks_uri: metadata.jwks_uri };
  for (const [name, value] of Object.entries(endpoints)) {
    if (typeof value !== 'string' || !URL.canParse(value)) throw UpstreamFailure.invalid(`its discovery document has no valid ${name}${name === 'jwks_uri' ? ', so its ID tokens cannot be checked' : ''}`);
  }
  const challenges = metadata.code_challenge_methods_supported;
  if (challenges && !challenges.includes('S256')) throw UpstreamFailure.invalid('it does not support PKCE with S256');
}
