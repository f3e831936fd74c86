import { Module } from '@nestjs/common';
import { KeyRevocationListener } from './key-revocation-listener.js';
import { KeysModule } from './keys.module.js';
import { SigningKeyBootstrap } from './signing-key-bootstrap.js';

/**
 * What a running service instance adds to the keys: the start-up bootstrap and the revocation
 * listener. Only AppModule imports it; the CLI must never create or replace keys implicitly.
 */
@Module({
  imports: [KeysModule],
  providers: [SigningKeyBootstrap, KeyRevocationListener],
})
export class KeysInstanceModule {}
