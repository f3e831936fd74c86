import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { CodesModule } from '../codes/codes.module.js';
import { IdentityProvidersModule } from '../identity-providers/identity-providers.module.js';
import { KeysModule } from '../keys/keys.module.js';
import { SessionsModule } from '../sessions/sessions.module.js';
import { TokenModule } from '../token/token.module.js';
import { UsersModule } from '../users/users.module.js';
import { ApprovedStatesService } from './approved-states.service.js';
import { AuthorizeController } from './authorize.controller.js';
import { HelperController } from './helper.controller.js';
import { HelperService } from './helper.service.js';
import { LoginAttemptsService } from './login-attempts.service.js';
import { LinkAnswersService } from './link-answers.service.js';
import { LoginService } from './login.service.js';
import { SignInLinksService } from './sign-in-links.service.js';
import { StateTokensService } from './state-tokens.service.js';

/** The device authorization helper: sign-in links for devices, the login page, and code pick-up. */
@Module({
  imports: [ClientsModule, CodesModule, IdentityProvidersModule, KeysModule, SessionsModule, TokenModule, UsersModule],
  controllers: [HelperController, AuthorizeController],
  providers: [ApprovedStatesService, HelperService, LinkAnswersService, LoginAttemptsService, LoginService, SignInLinksService, StateTokensService],
  // The device flow's verification page signs the same users in, under the same slow-down.
  exports: [LoginAttemptsService, LoginService],
})
export class OAuthHelperModule {}
