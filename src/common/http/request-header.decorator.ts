import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

/**
 * A single-valued request header, read as `@Headers(name)` reads it, but left out of the OpenAPI
 * parameters, where `@Headers` would list it as a required header: Authorization is described by
 * the security schemes, Content-Type by the request body's media types.
 */
export const RequestHeader = createParamDecorator(
  (name: 'authorization' | 'content-type', context: ExecutionContext): string | undefined =>
    context.switchToHttp().getRequest<FastifyRequest>().headers[name],
);
