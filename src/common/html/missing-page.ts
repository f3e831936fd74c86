import type { FastifyReply, FastifyRequest } from 'fastify';
import { escapeHtml, pageLayout } from './page-layout.js';
import { sendPlainPage } from './html-reply.js';

/** The longest address the page repeats; a longer one is cut, it only has to be recognisable. */
const SHOWN_PATH_LENGTH = 120;

/**
 * A browser's address bar asks for a page (`Accept: text/html…`); an API client asks for JSON or
 * anything. Only the former gets an HTML answer for an address that does not exist.
 */
export const wantsPage = (request: FastifyRequest) =>
  (request.method === 'GET' || request.method === 'HEAD') && /(^|,)\s*text\/html\s*(;|,|$)/i.test(request.headers.accept ?? '');

/** The 404 page: what went wrong (the address, never its query) and where to go instead. */
export function sendMissingPage(reply: FastifyReply, path: string): void {
  const shown = path.length > SHOWN_PATH_LENGTH ? `${path.slice(0, SHOWN_PATH_LENGTH)}…` : path;
  const html = pageLayout(
    'Page not found',
    `<h1>Page not found</h1>
<p>There is no page at <span class="address">${escapeHtml(shown)}</span>. Check the address for a typing mistake.</p>
<p><a href="/">Go to the home page</a></p>
<p class="hint">To sign in a device, open the address the device shows, or scan its QR code.</p>`,
  );
  sendPlainPage(reply, 404, html);
}
