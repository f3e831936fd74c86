import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module.js';
import { JwksController } from './jwks.controller.js';
import { JwtSignerService } from './jwt-signer.service.js';
import { KeyAdminService } from './key-admin.service.js';
import { KeysRepository } from './keys.repository.js';
import { KeysService } from './keys.service.js';
import { PrivateKeyVaultService } from './private-key-vault.service.js';
import { SigningKeyEntity } from './signing-key.entity.js';

/** Signing keys as every process uses them; the service's start-up part is KeysInstanceModule. */
@Module({
  imports: [TypeOrmModule.forFeature([SigningKeyEntity]), JwtModule.register({}), AuditModule],
  controllers: [JwksController],
  providers: [KeysRepository, PrivateKeyVaultService, KeysService, KeyAdminService, JwtSignerService],
  // The repository and vault for KeysInstanceModule's start-up work.
  exports: [KeysService, KeyAdminService, JwtSignerService, KeysRepository, PrivateKeyVaultService],
})
export class KeysModule {}
