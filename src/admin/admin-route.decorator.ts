import { applyDecorators, Controller, UseInterceptors } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { RequiresScope } from '../bearer/bearer.guard.js';
import { ApiErrorResponse, ApiUnavailableResponse } from '../common/errors/api-error-response.decorator.js';
import { ActingClientInterceptor } from './acting-client.interceptor.js';
import { ADMIN_READ_SCOPE, ADMIN_WRITE_SCOPE } from './admin-scopes.js';
import { MAX_PAGE_LIMIT } from '../common/validation/page-query.js';

/** A controller of the admin API, at `admin/v1/<path>`: every route runs as its caller (ActingClientInterceptor). */
export const AdminController = (path: string) =>
  applyDecorators(Controller(`admin/v1/${path}`), UseInterceptors(ActingClientInterceptor), ApiTags('admin API'), ApiBearerAuth(), ApiUnavailableResponse());

/** A read: a token with admin:read. */
export const AdminRead = () => RequiresScope(ADMIN_READ_SCOPE);

/** A change: a token with admin:write; recorded in the audit trail as the caller's. */
export const AdminWrite = () => RequiresScope(ADMIN_WRITE_SCOPE);

/** `?limit=` and `?after=` of a list. */
export const ApiPage = (idName: string) =>
  applyDecorators(
    ApiQuery({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT, default: 100 } }),
    ApiQuery({ name: 'after', required: false, description: `the last ${idName} of the previous page: the next page starts after it (a page shorter than limit is the last)` }),
    ApiErrorResponse(400, '`limit` not from 1 to 1000, or `after` not an id'),
  );
