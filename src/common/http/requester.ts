import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

/** Who sent a request, as far as the service knows: the address Fastify gives it (TRUST_PROXY honoured) and the request's id. */
export interface Requester {
  address: string;
  requestId: string;
}

export const requesterOf = (request: FastifyRequest): Requester => ({ address: request.ip, requestId: String(request.id) });

/** The request's `Requester`, as a handler parameter. */
export const RequestedBy = createParamDecorator((_data: unknown, context: ExecutionContext): Requester => requesterOf(context.switchToHttp().getRequest<FastifyRequest>()));
