import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { TypeOrmModule } from '@nestjs/typeorm';
import { JwksController } from './jwks.controller.js';
import { JwtSigner } from './jwt-signer.service.js';
import { KeysRepository } from './keys.repository.js';
import { KeysService } from './keys.service.js';
import { SigningKeyEntity } from './signing-key.entity.js';

@Module({
  imports: [TypeOrmModule.forFeature([SigningKeyEntity]), JwtModule.register({})],
  controllers: [JwksController],
  providers: [KeysRepository, KeysService, JwtSigner],
  exports: [KeysService, JwtSigner],
})
export class KeysModule {}
