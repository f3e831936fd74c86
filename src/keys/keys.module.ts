import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { TypeOrmModule } from '@nestjs/typeorm';
import { JwksController } from './jwks.controller.js';
import { JwtSigner } from './jwt-signer.service.js';
import { KeyAdminService } from './key-admin.service.js';
import { KeysRepository } from './keys.repository.js';
import { KeysService } from './keys.service.js';
import { PrivateKeyVault } from './private-key-vault.js';
import { SigningKeyEntity } from './signing-key.entity.js';

/** Signing keys as every process uses them; the service's start-up part is KeysInstanceModule. */
@Module({
  imports: [TypeOrmModule.forFeature([SigningKeyEntity]), JwtModule.register({})],
  controllers: [JwksController],
  providers: [KeysRepository, PrivateKeyVault, KeysService, KeyAdminService, JwtSigner],
  // The repository and vault for KeysInstanceModule's start-up work.
  exports: [KeysService, KeyAdminService, JwtSigner, KeysRepository, PrivateKeyVault],
})
export class KeysModule {}
