import { randomUUID } from 'node:crypto';
import type { TestApp } from '../setup/test-app.js';
import type { TestClient } from './oauth.factory.js';

export const PUBLISH_SCOPE = 'notification:publish';
export const SUBSCRIBE_SCOPE = 'notification:subscribe';

/** A report notification: exactly these fields, in this order (the order they are pushed in). */
export interface ReportNotification {
  correlationId: string;
  productName: string;
  origin: string;
  status: string;
  statusTimestamp: string;
  deliverables: { productType: string }[];
  customerReferenceId: string;
  routeCalculationScheduleId: string;
  warnings: string[];
  creationDate: string;
}

/** The publish body: the notification's fields plus `recipient`. */
export type PublishBody = ReportNotification & { recipient: string };

/** A valid publish body for `recipient`, fresh ids each call; `overrides` replace fields (field order kept). */
export function validNotification(recipient: string, overrides: Partial<PublishBody> = {}): PublishBody {
  return {
    recipient,
    correlationId: randomUUID(),
    productName: 'RouteAdvice',
    origin: 'RouteConfigurationService',
    status: 'New',
    statusTimestamp: '2026-11-21T08:30:00.123Z',
    deliverables: [{ productType: 'pdf' }, { productType: 'rtz' }],
    customerReferenceId: 'CUST-REF-42',
    routeCalculationScheduleId: randomUUID(),
    warnings: ['Image 3 of the PDF could not be generated'],
    creationDate: '2026-11-21T08:29:59.987Z',
    ...overrides,
  };
}

/** What a subscriber receives for `body`: the notification's fields in their documented order, without `recipient`. */
export function pushedMessage(body: PublishBody): ReportNotification {
  return {
    correlationId: body.correlationId,
    productName: body.productName,
    origin: body.origin,
    status: body.status,
    statusTimestamp: body.statusTimestamp,
    deliverables: body.deliverables,
    customerReferenceId: body.customerReferenceId,
    routeCalculationScheduleId: body.routeCalculationScheduleId,
    warnings: body.warnings,
    creationDate: body.creationDate,
  };
}

/** A client-credentials access token from POST /public/api/oauth2/token (throws unless 200). */
export async function clientToken(app: TestApp, client: TestClient, scope?: string): Promise<string> {
  const form: Record<string, string> = { grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret };
  if (scope !== undefined) form.scope = scope;
  const response = await fetch(`${app.baseUrl}/public/api/oauth2/token`, { method: 'POST', body: new URLSearchParams(form) });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`token endpoint answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { access_token: string }).access_token;
}

/** POST /voyage/notification/v1/notifications with a bearer token (or none) and a JSON body. */
export async function publish(app: TestApp, token: string | undefined, body: unknown) {
  const response = await fetch(`${app.baseUrl}/voyage/notification/v1/notifications`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown>, text };
}
