import { ArrayMinSize, ArrayUnique, IsArray, IsIn, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { SCOPE_TOKEN } from '../../clients/dto/create-client.dto.js';
import { PlainText } from '../../common/validation/storable-text.js';
import { IDP_MODES, type IdpMode, LOCAL_SIGN_IN } from '../identity-provider.entity.js';

/** A provider's name: it is part of its callback URL, so only what needs no escaping there. */
export const IDP_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const DEFAULT_IDP_SCOPES = ['openid', 'profile', 'email', 'offline_access'];

/** What idp:update may change (every field optional). */
export class IdentityProviderChangesDto {
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  @Matches(/^[\x21-\x7e]+$/, { message: 'client_id must be printable ASCII without spaces' })
  clientId?: string;

  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(100)
  @Matches(/^\S(.*\S)?$/, { message: 'display name must not start or end with whitespace' })
  @PlainText()
  displayName?: string;

  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayUnique()
  @Matches(SCOPE_TOKEN, { each: true, message: 'each scope must be a scope token (RFC 6749 §3.3)' })
  scopes?: string[];

  @IsOptional()
  @IsIn(IDP_MODES, { message: `mode must be one of: ${IDP_MODES.join(', ')}` })
  mode?: IdpMode;
}

export class NewIdentityProviderDto extends IdentityProviderChangesDto {
  @IsString()
  @Matches(IDP_NAME, { message: 'name must be 1 to 63 lowercase letters, digits, "-" or "_", starting with a letter or digit' })
  @Matches(new RegExp(`^(?!${LOCAL_SIGN_IN}$)`), { message: `name must not be "${LOCAL_SIGN_IN}": that means the service's own users` })
  name: string;

  @IsString()
  @MaxLength(2000)
  @PlainText()
  issuer: string;

  @IsString()
  @MinLength(1)
  @MaxLength(200)
  @Matches(/^[\x21-\x7e]+$/, { message: 'client_id must be printable ASCII without spaces' })
  declare clientId: string;
}
