import { Controller, Get, Headers, NotFoundException, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse } from '../common/errors/api-error-response.decorator.js';
import type { FastifyReply } from 'fastify';
import { ApiHtmlResponse } from '../common/html/api-html-response.decorator.js';
import { sendPlainPage } from '../common/html/html-reply.js';
import { homePage } from './home-page.js';
import { PortalBrandingService } from './portal-branding.service.js';

/** A day: the page asks for the logo by a versioned address, so a changed file is a new address at once. */
const LOGO_MAX_AGE_S = 86_400;

@ApiTags('pages')
@Controller()
export class PortalController {
  constructor(private readonly branding: PortalBrandingService) {}

  @Get()
  @ApiOperation({ summary: "The service's home page (HTML): what it is, a link to connect a device with its code, and links to this documentation and to /health" })
  @ApiHtmlResponse(200, 'the home page, under the portal\'s name (PORTAL_NAME) and logo (PORTAL_LOGO_FILE)')
  home(@Res() reply: FastifyReply): void {
    sendPlainPage(reply, 200, homePage(this.branding.name));
  }

  @Get('portal/logo')
  @ApiOperation({ summary: "The portal's logo (PORTAL_LOGO_FILE), shown on every page; 404 without one" })
  @ApiOkResponse({
    description: 'the image, with `Cache-Control: public, max-age=86400`, an `ETag` (304 to a matching `If-None-Match`), and a Content-Security-Policy that keeps an SVG from running anything',
    content: Object.fromEntries(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/svg+xml'].map((type) => [type, { schema: { type: 'string', format: 'binary' } }])),
  })
  @ApiResponse({ status: 304, description: '`If-None-Match` named its `ETag`: the copy the browser has is current' })
  @ApiErrorResponse(404, 'no PORTAL_LOGO_FILE is set')
  logo(@Headers('if-none-match') ifNoneMatch: string | undefined, @Res() reply: FastifyReply): void {
    const logo = this.branding.logo;
    if (!logo) throw new NotFoundException('no portal logo is set (PORTAL_LOGO_FILE)');
    void reply
      .header('Cache-Control', `public, max-age=${LOGO_MAX_AGE_S}`)
      .header('ETag', logo.etag)
      .header('X-Content-Type-Options', 'nosniff')
      // An SVG opened on its own is a document of this origin: it may show itself, never run a script.
      .header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox");
    if (ifNoneMatch?.split(',').some((tag) => tag.trim() === logo.etag)) {
      void reply.status(304).send();
      return;
    }
    void reply.type(logo.contentType).status(200).send(logo.bytes);
  }
}
