import { ArrayMinSize, ArrayUnique, IsArray, IsIn, IsString, Matches, MaxLength, MinLength, ValidateBy } from 'class-validator';
import { SCOPE_TOKEN } from '../../common/validation/scope-token.js';
import { PlainText } from '../../common/validation/storable-text.js';
import { CLIENT_HEARTBEAT_SECONDS, GRANT_TYPES, type GrantType, ID_TOKEN_ALGS, type IdTokenAlg, TOKEN_ENDPOINT_AUTH_METHODS, type TokenEndpointAuthMethod } from '../client.entity.js';
import { IsPostLogoutRedirect, IsRedirectPattern } from '../url-validators.js';
import { IsScopeDescriptions } from '../is-scope-descriptions.decorator.js';

/** A client's own heartbeat: whole seconds within CLIENT_HEARTBEAT_SECONDS, or null for the instance's WS_HEARTBEAT_INTERVAL. */
const IsClientHeartbeat = () =>
  ValidateBy({
    name: 'isClientHeartbeat',
    validator: {
      validate: (value: unknown) =>
        value === null || (Number.isInteger(value) && (value as number) >= CLIENT_HEARTBEAT_SECONDS.min && (value as number) <= CLIENT_HEARTBEAT_SECONDS.max),
      defaultMessage: () => `the heartbeat (--heartbeat) must be whole seconds from ${CLIENT_HEARTBEAT_SECONDS.min} to ${CLIENT_HEARTBEAT_SECONDS.max}, or default`,
    },
  });

export class CreateClientDto {
  @IsString()
  @MinLength(1)
  @MaxLength(100)
  @Matches(/^\S(.*\S)?$/, { message: 'name must not start or end with whitespace' })
  @PlainText()
  name: string;

  @IsArray()
  @ArrayUnique()
  @IsIn(GRANT_TYPES, { each: true, message: `grant must be one of: ${GRANT_TYPES.join(', ')}` })
  grants: GrantType[];

  @IsArray()
  @ArrayUnique()
  @IsRedirectPattern({ each: true })
  redirectPatterns: string[];

  @IsArray()
  @ArrayUnique()
  @Matches(SCOPE_TOKEN, { each: true, message: 'each scope must be a scope token (RFC 6749 §3.3)' })
  scopes: string[];

  /** How the client's users sign in: `local` and/or identity provider names (`client:create --sign-in`). */
  @IsArray()
  @ArrayMinSize(1)
  @ArrayUnique()
  @Matches(/^[a-z0-9][a-z0-9_-]{0,62}$/, { each: true, message: 'each sign-in method must be "local" or an identity provider name' })
  signIn: string[];

  /** What the approval page shows for a scope instead of its name (`client:create --scope-description SCOPE=TEXT`). */
  @IsScopeDescriptions()
  scopeDescriptions: Record<string, string>;

  /** `none` for a public client (`client:create --public`): no secret, PKCE required. */
  @IsIn(TOKEN_ENDPOINT_AUTH_METHODS, { message: `token_endpoint_auth_method must be one of: ${TOKEN_ENDPOINT_AUTH_METHODS.join(', ')}` })
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;

  /** Where RP-initiated logout may send the browser (`client:create --post-logout-redirect URL`). */
  @IsArray()
  @ArrayUnique({ message: 'each --post-logout-redirect may be given once' })
  @IsPostLogoutRedirect({ each: true })
  postLogoutRedirectUris: string[];

  /** What its ID tokens are signed with (`client:create --id-token-alg`). */
  @IsIn(ID_TOKEN_ALGS, { message: `the ID token algorithm (--id-token-alg) must be one of: ${ID_TOKEN_ALGS.join(', ')}` })
  idTokenSignedResponseAlg: IdTokenAlg;

  /** Seconds between pings on its notification streams (`client:create --heartbeat`); null: WS_HEARTBEAT_INTERVAL. */
  @IsClientHeartbeat()
  heartbeatInterval: number | null;
}
