import { IsString, Matches, MaxLength, MinLength } from 'class-validator';

export class CreateUserDto {
  @IsString()
  @MinLength(1, { message: 'username must not be empty' })
  @MaxLength(128)
  @Matches(/^[^\s\x00-\x1f\x7f]+$/, { message: 'username must not contain spaces or control characters' })
  username: string;

  @IsString()
  @MinLength(8, { message: 'password must be at least 8 characters long' })
  @MaxLength(1024, { message: 'password must be at most 1024 characters long' })
  password: string;
}
