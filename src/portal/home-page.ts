import { escapeHtml, pageLayout } from '../common/html/page-layout.js';

/**
 * What a person who types the service's address sees: what this service is, and where to go (to
 * connect a device with its code; the API documentation and health, for whoever runs or builds
 * against it).
 */
export function homePage(portalName: string): string {
  return pageLayout(
    'Sign-in for devices and applications',
    `<h1>Sign-in for devices and applications</h1>
<p>This service signs devices and applications in with your ${escapeHtml(portalName)} account. They send you here when they need you: open the address or scan the code your device shows.</p>
<a class="button" href="/sso/device">Connect a device with its code</a>
<p class="hint">For developers and operators:</p>
<ul class="links">
<li><a href="/docs">API documentation</a></li>
<li><a href="/health">Service health</a></li>
</ul>`,
  );
}
