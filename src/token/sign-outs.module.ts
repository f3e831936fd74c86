import { Module } from '@nestjs/common';
import { SignOutsRepository } from './sign-outs.repository.js';

/** Ending sign-ins, for the features that decide it (users, clients, the grants:revoke command) without the token endpoints. */
@Module({
  providers: [SignOutsRepository],
  exports: [SignOutsRepository],
})
export class SignOutsModule {}
