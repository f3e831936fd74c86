import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { IdentityProviderEntity, LOCAL_SIGN_IN } from './identity-provider.entity.js';
import { IdentityProvidersService } from './identity-providers.service.js';
import { UpstreamClientsService } from './upstream-clients.service.js';

/** How a client's users may sign in, as its pages offer it. */
export interface SignInChoice {
  /** The username and password form of the service's own users. */
  local: boolean;
  /** Its providers, in the order the operator gave them. */
  providers: IdentityProviderEntity[];
}

/** Whether a choice is one provider only: its pages send the browser straight there. */
export const onlyProvider = (choice: SignInChoice): IdentityProviderEntity | undefined =>
  !choice.local && choice.providers.length === 1 ? choice.providers[0] : undefined;

/** Whether a client's methods let `user` in: a portal user of the service needs `local`, a brokered one their provider. */
export const admitsUser = (choice: SignInChoice, user: { provider: string | null }) =>
  user.provider === null ? choice.local : choice.providers.some(({ name }) => name === user.provider);

@Injectable()
export class SignInMethodsService {
  constructor(
    private readonly registry: IdentityProvidersService,
    private readonly upstream: UpstreamClientsService,
    @InjectRepository(IdentityProviderEntity) private readonly providers: Repository<IdentityProviderEntity>,
  ) {}

  async of(client: { signIn: string[] }): Promise<SignInChoice> {
    const local = client.signIn.includes(LOCAL_SIGN_IN);
    if (local && client.signIn.length === 1) return { local, providers: [] };
    return { local, providers: await this.registry.findAll(client.signIn) };
  }

  /**
   * The origins a page's form may lead to besides its own: the providers' sign-in pages, as a
   * form's POST may be answered by a redirect there and Chrome applies form-action to it.
   */
  async formTargets(): Promise<string[]> {
    const providers = await this.providers.find({ select: { name: true, issuer: true } });
    const origins = providers.flatMap((provider) => [new URL(provider.issuer).origin, this.upstream.knownAuthorizationOrigin(provider.name)]);
    return [...new Set(origins.filter((origin) => origin !== undefined))];
  }
}
