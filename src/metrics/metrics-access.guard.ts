import { type CanActivate, type ExecutionContext, ForbiddenException, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Env, InvalidConfigError } from '../config/env.js';
import { type AddressAllowList, InvalidAllowListEntry, parseAddressAllowList } from '../common/http/address-allow-list.js';

/** METRICS_ALLOWED_CIDRS read, or undefined when unset (anyone may scrape); a bad entry is a configuration error. */
export function readMetricsAllowList(env: Env): AddressAllowList | undefined {
  if (env.METRICS_ALLOWED_CIDRS === undefined) return undefined;
  try {
    return parseAddressAllowList(env.METRICS_ALLOWED_CIDRS);
  } catch (error) {
    if (!(error instanceof InvalidAllowListEntry)) throw error;
    throw new InvalidConfigError([`Invalid configuration: METRICS_ALLOWED_CIDRS: ${error.message} (got ${JSON.stringify(env.METRICS_ALLOWED_CIDRS)})`]);
  }
}

/**
 * Only the addresses of METRICS_ALLOWED_CIDRS may scrape: request.ip, so behind a trusted proxy
 * (TRUST_PROXY) the forwarded client address. Others get 403.
 */
@Injectable()
export class MetricsAccessGuard implements CanActivate {
  private readonly allowed: AddressAllowList | undefined;

  constructor(env: Env) {
    this.allowed = readMetricsAllowList(env);
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.allowed || this.allowed(context.switchToHttp().getRequest<FastifyRequest>().ip)) return true;
    throw new ForbiddenException('Metrics are not available to this address');
  }
}
