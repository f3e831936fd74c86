import { Module } from '@nestjs/common';
import { BearerModule } from '../bearer/bearer.module.js';
import { ClientsModule } from '../clients/clients.module.js';
import { RegistrationController } from './registration.controller.js';
import { RegistrationService } from './registration.service.js';

/** Registration from software (RFC 7591/7592): the client registry's HTTP way in for a portal's backend. */
@Module({
  imports: [BearerModule, ClientsModule],
  controllers: [RegistrationController],
  providers: [RegistrationService],
})
export class RegistrationModule {}
