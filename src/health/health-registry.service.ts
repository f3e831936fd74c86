import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import type { HealthIndicatorFunction } from '@nestjs/terminus';

/**
 * The components /health checks. Feature modules add theirs (the notification listener adds
 * one) by injecting this registry; a shutting-down instance reports itself down so load
 * balancers stop sending it traffic.
 */
@Injectable()
export class HealthRegistryService implements BeforeApplicationShutdown {
  private readonly indicators = new Map<string, HealthIndicatorFunction>();
  private shuttingDown = false;

  register(name: string, indicator: HealthIndicatorFunction): void {
    this.indicators.set(name, indicator);
  }

  checks(): HealthIndicatorFunction[] {
    return [...this.indicators.values()];
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  beginShutdown(): void {
    this.shuttingDown = true;
  }

  beforeApplicationShutdown(): void {
    this.beginShutdown();
  }
}
