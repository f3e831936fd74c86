import type { ClientEntity } from '../../clients/client.entity.js';
import type { GrantType } from '../../clients/client.entity.js';
import type { OAuthParams } from '../oauth-params.js';

/** One grant type of a token endpoint: its name and how it turns parameters into a token response. */
export interface GrantHandler<Response = object> {
  readonly name: GrantType;
  handle(params: OAuthParams, client: ClientEntity): Promise<Response>;
}
