import type { ClientEntity } from '../../clients/client.entity.js';
import type { GrantType } from '../../clients/client.entity.js';
import type { AnswerDeadline } from '../../common/http/request-deadlines.js';
import type { Requester } from '../../common/http/requester.js';
import type { OAuthParams } from '../../oauth/oauth-params.js';

/**
 * One grant type of a token endpoint: its name and how it turns parameters into a token response.
 * What it commits that only the response delivers (a redeemed code, a rotated refresh token) is
 * committed through `deadline`, after everything that could still fail (signing included).
 * `requester` is who a security event the grant records (a replayed code) came from.
 */
export interface GrantHandler<Response = object> {
  readonly name: GrantType;
  handle(params: OAuthParams, client: ClientEntity, deadline: AnswerDeadline, requester: Requester): Promise<Response>;
}
