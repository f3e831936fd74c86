import { Module } from '@nestjs/common';
import { TokenModule } from '../token/token.module.js';
import { DeviceCodeRetention } from './device-code-retention.js';
import { DeviceCodesRepository } from './device-codes.repository.js';

/** The standard device authorization grant (RFC 8628), beside the seed's helper. */
@Module({
  imports: [TokenModule],
  providers: [DeviceCodesRepository, DeviceCodeRetention],
  exports: [DeviceCodesRepository],
})
export class DeviceFlowModule {}
