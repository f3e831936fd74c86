import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { actingAs } from '../audit/actor.js';
import type { AuthenticatedRequest } from '../bearer/bearer.guard.js';
import { requesterOf } from '../common/http/requester.js';
import { SecurityEvents } from '../common/logging/security-events.js';

/**
 * Runs an admin route as the client whose token the guard accepted: what it changes, the audit
 * trail records as that client's (and logs as `admin.*`); what it reads is logged as `admin.read`.
 */
@Injectable()
export class ActingClientInterceptor implements NestInterceptor {
  constructor(private readonly events: SecurityEvents) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const requester = requesterOf(request);
    const clientId = request.token.client_id;
    if (request.method === 'GET') this.events.emit('admin.read', { reason: 'admin_api', clientId, route: `GET ${request.routeOptions.url}` }, requester);
    // The handler runs when the answer is subscribed to: inside actingAs, so all it awaits is too.
    return new Observable((subscriber) => actingAs({ kind: 'client', clientId, requester }, () => next.handle().subscribe(subscriber)));
  }
}
