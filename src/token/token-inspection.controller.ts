import { Body, Controller, Headers, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { OAuthExceptionFilter } from './oauth-exception.filter.js';
import { OAuthFormRoute } from './oauth-form-route.decorator.js';
import { TokenInspectionService } from './token-inspection.service.js';

@ApiTags('sso')
@Controller('sso')
@UseFilters(OAuthExceptionFilter)
export class TokenInspectionController {
  constructor(private readonly inspection: TokenInspectionService) {}

  @Post('introspect')
  @HttpCode(200)
  @OAuthFormRoute()
  @ApiOperation({ summary: "Token introspection (RFC 7662) of the calling client's own access and refresh tokens" })
  @ApiOkResponse({ description: '`{active: false}` or `{active: true, scope, client_id, sub, exp, …}`' })
  introspect(@Body() body: unknown, @Headers('authorization') authorization?: string, @Headers('content-type') contentType?: string) {
    return this.inspection.introspect(body, authorization, contentType);
  }

  @Post('revoke')
  @HttpCode(200)
  @OAuthFormRoute()
  @ApiOperation({ summary: 'Token revocation (RFC 7009); revoking a refresh token ends its whole grant' })
  @ApiOkResponse({ description: 'empty body' })
  async revoke(@Body() body: unknown, @Headers('authorization') authorization?: string, @Headers('content-type') contentType?: string): Promise<void> {
    await this.inspection.revoke(body, authorization, contentType);
  }
}
