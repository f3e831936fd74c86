import { IsString, Matches, MaxLength, MinLength } from 'class-validator';

/** What a username may contain: no whitespace, no control characters. */
export const USERNAME_CHARACTERS = /^[^\s\x00-\x1f\x7f]+$/;
export const USERNAME_MAX_LENGTH = 128;
export const PASSWORD_MAX_LENGTH = 1024;

/**
 * Whether a sign-in could match a user at all (the rules above, loosely: MaxLength counts
 * characters, this counts UTF-16 units). Anything else is a wrong username or password without
 * a database round trip or a password hash.
 */
export const isPlausibleLogin = (username: string, password: string) =>
  username.length <= 2 * USERNAME_MAX_LENGTH && USERNAME_CHARACTERS.test(username) && password.length <= 2 * PASSWORD_MAX_LENGTH;

/** A password as every command that sets one takes it. */
export class NewPasswordDto {
  @IsString()
  @MinLength(8, { message: 'password must be at least 8 characters long' })
  @MaxLength(PASSWORD_MAX_LENGTH, { message: 'password must be at most 1024 characters long' })
  password: string;
}

export class CreateUserDto extends NewPasswordDto {
  @IsString()
  @MinLength(1, { message: 'username must not be empty' })
  @MaxLength(USERNAME_MAX_LENGTH)
  @Matches(USERNAME_CHARACTERS, { message: 'username must not contain spaces or control characters' })
  username: string;
}
