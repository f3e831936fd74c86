import { plainToInstance } from 'class-transformer';
import { validate, type ValidationError, type ValidatorOptions } from 'class-validator';
import { invalidInput } from '../errors/app-error.js';

/** Validates a plain object against a DTO class outside HTTP (CLI input); throws invalid_input. */
export async function validateInput<T extends object>(
  dto: new () => T,
  input: unknown,
  options: ValidatorOptions = { whitelist: true, forbidNonWhitelisted: true },
): Promise<T> {
  const instance = plainToInstance(dto, input);
  if (typeof instance !== 'object' || instance === null || Array.isArray(instance)) throw invalidInput('the input must be a JSON object');
  const errors = await validate(instance, options);
  if (errors.length > 0) throw invalidInput(errors.flatMap(messagesOf).join('; '));
  return instance;
}

const messagesOf = (error: ValidationError): string[] => [
  ...Object.values(error.constraints ?? {}),
  ...(error.children ?? []).flatMap(messagesOf),
];
