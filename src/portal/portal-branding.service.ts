import { Injectable } from '@nestjs/common';
import { setPortal } from '../common/html/page-layout.js';
import { Env } from '../config/env.js';
import { type PortalLogo, readPortalLogo } from './portal-logo.js';

/** Where the logo is served; its address carries its version, so a new file is fetched at once. */
export const LOGO_PATH = '/portal/logo';

/**
 * Whose pages these are: PORTAL_NAME and the logo of PORTAL_LOGO_FILE, read once, and handed to
 * the pages' layout, which every page of the service goes through.
 */
@Injectable()
export class PortalBrandingService {
  readonly name: string;
  readonly logo: PortalLogo | undefined;

  constructor(env: Env) {
    this.name = env.PORTAL_NAME;
    this.logo = readPortalLogo(env);
    setPortal({ name: this.name, logoUrl: this.logo && `${LOGO_PATH}?v=${this.logo.etag.replaceAll('"', '')}` });
  }
}
