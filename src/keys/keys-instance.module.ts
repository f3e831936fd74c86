import { Module } from '@nestjs/common';
import { KeyRevocationListenerService } from './key-revocation-listener.service.js';
import { KeysModule } from './keys.module.js';
import { SigningKeyBootstrapService } from './signing-key-bootstrap.service.js';

/**
 * What a running service instance adds to the keys: the start-up bootstrap and the revocation
 * listener. Only AppModule imports it; the CLI must never create or replace keys implicitly.
 */
@Module({
  imports: [KeysModule],
  providers: [SigningKeyBootstrapService, KeyRevocationListenerService],
})
export class KeysInstanceModule {}
