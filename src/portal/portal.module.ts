import { Module } from '@nestjs/common';
import { PortalBrandingService } from './portal-branding.service.js';
import { PortalController } from './portal.controller.js';

/** Whose service this is, for the person at the browser: the portal's name and logo on every page, and the home page. */
@Module({
  controllers: [PortalController],
  providers: [PortalBrandingService],
})
export class PortalModule {}
