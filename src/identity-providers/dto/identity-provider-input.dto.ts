import { ArrayMinSize, ArrayUnique, IsArray, IsBoolean, IsIn, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { SCOPE_TOKEN } from '../../common/validation/scope-token.js';
import { PlainText, WellFormedText } from '../../common/validation/storable-text.js';
import { IDP_MODES, type IdpMode, LOCAL_SIGN_IN } from '../identity-provider.entity.js';

/** A provider's name: it is part of its callback URL, so only what needs no escaping there. */
export const IDP_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const DEFAULT_IDP_SCOPES = ['openid', 'profile', 'email', 'offline_access'];

/** What idp:update may change (every field optional). */
export class IdentityProviderChangesDto {
  @IsOptional()
  @IsString({ message: '--client-id must be text' })
  @MinLength(1, { message: '--client-id must not be empty' })
  @MaxLength(200, { message: '--client-id must be at most 200 characters long' })
  @Matches(/^[\x21-\x7e]+$/, { message: '--client-id must be printable ASCII without spaces' })
  clientId?: string;

  @IsOptional()
  @IsString({ message: '--display-name must be text' })
  @MinLength(1, { message: '--display-name must not be empty' })
  @MaxLength(100, { message: '--display-name must be at most 100 characters long' })
  @Matches(/^\S(.*\S)?$/, { message: '--display-name must not start or end with whitespace' })
  @PlainText({ message: '--display-name must not contain control characters' })
  @WellFormedText({ message: '--display-name must be well-formed Unicode' })
  displayName?: string;

  @IsOptional()
  @IsArray({ message: '--scope must be a list' })
  @ArrayMinSize(1, { message: '--scope must name at least one scope' })
  @ArrayUnique({ message: '--scope must not name a scope twice' })
  @Matches(SCOPE_TOKEN, { each: true, message: 'each --scope must be a scope token (RFC 6749 §3.3)' })
  scopes?: string[];

  @IsOptional()
  @IsIn(IDP_MODES, { message: `--mode must be one of: ${IDP_MODES.join(', ')}` })
  mode?: IdpMode;

  @IsOptional()
  @IsBoolean({ message: '--trust-email is a switch' })
  trustEmail?: boolean;
}

export class NewIdentityProviderDto extends IdentityProviderChangesDto {
  @IsString({ message: '--name must be text' })
  @Matches(IDP_NAME, { message: '--name must be 1 to 63 lowercase letters, digits, "-" or "_", starting with a letter or digit' })
  @Matches(new RegExp(`^(?!${LOCAL_SIGN_IN}$)`), { message: `--name must not be "${LOCAL_SIGN_IN}": that means the service's own users` })
  name: string;

  @IsString({ message: '--issuer must be text' })
  @MaxLength(2000, { message: '--issuer must be at most 2000 characters long' })
  @PlainText({ message: '--issuer must not contain control characters' })
  @WellFormedText({ message: '--issuer must be well-formed Unicode' })
  issuer: string;

  @IsString({ message: '--client-id must be text' })
  @MinLength(1, { message: '--client-id must not be empty' })
  @MaxLength(200, { message: '--client-id must be at most 200 characters long' })
  @Matches(/^[\x21-\x7e]+$/, { message: '--client-id must be printable ASCII without spaces' })
  declare clientId: string;
}
