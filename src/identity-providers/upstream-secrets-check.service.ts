import { Injectable, type OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { StartupRefusal } from '../common/errors/startup-refusal.js';
import { IdentityProviderEntity, secretContext } from './identity-provider.entity.js';
import { sessionContext, UpstreamSessionsRepository } from './sign-in/upstream-sessions.repository.js';
import { UpstreamVaultService, UpstreamVaultError } from './upstream-vault.service.js';

/** KEYS_ENCRYPTION_KEY cannot open what the identity providers entrusted to the service. */
export class UpstreamSecretsRefused extends StartupRefusal {}

/**
 * At start, as the signing keys are: every registered provider needs KEYS_ENCRYPTION_KEY (a
 * sign-in there seals its PKCE verifier), and the key must open each provider's client secret and
 * the refresh tokens brokered sign-ins keep (one of them stands for all: they are sealed with the
 * same key). Otherwise the service would start and fail every sign-in there; it stops instead,
 * with one line naming the setting. It runs before any bootstrap (the signing keys' seals stored
 * keys with the key it is given: a wrong one must be refused first). The CLI does not check:
 * `idp:create` needs the key anyway.
 */
@Injectable()
export class UpstreamSecretsCheckService implements OnModuleInit {
  constructor(
    @InjectRepository(IdentityProviderEntity) private readonly providers: Repository<IdentityProviderEntity>,
    private readonly sessions: UpstreamSessionsRepository,
    private readonly vault: UpstreamVaultService,
  ) {}

  async onModuleInit(): Promise<void> {
    const providers = await this.providers.find({ order: { name: 'ASC' } });
    if (providers.length === 0) return;
    if (!this.vault.available) {
      throw new UpstreamSecretsRefused(
        `identity provider "${providers[0].name}" is registered, but KEYS_ENCRYPTION_KEY is not set: set it (in .env) to the key idp:create ran with, as signing in there stores secrets encrypted with it`,
      );
    }
    for (const provider of providers) {
      if (provider.clientSecretSealed) this.tryOpen(secretContext(provider.name), provider.clientSecretSealed, `the client secret of identity provider "${provider.name}"`);
    }
    const session = await this.sessions.anyWithRefreshToken();
    if (session) this.tryOpen(sessionContext(session.id), session.refreshTokenSealed!, `the refresh tokens of users who signed in at "${session.provider}"`);
  }

  private tryOpen(context: string, sealed: Buffer, what: string): void {
    try {
      this.vault.open(context, sealed);
    } catch (error) {
      if (!(error instanceof UpstreamVaultError)) throw error;
      throw new UpstreamSecretsRefused(`KEYS_ENCRYPTION_KEY does not open ${what}: set it (in .env) to the key it was stored with, the one idp:create ran with`);
    }
  }
}
