/** What went wrong, independent of the transport that reports it. */
export type AppErrorCode = 'not_found' | 'conflict' | 'invalid_input';

/** A failure a caller can act on; transports (HTTP filter, CLI) map the code to their own form. */
export class AppError extends Error {
  constructor(
    readonly code: AppErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const notFound = (message: string) => new AppError('not_found', message);
export const conflict = (message: string) => new AppError('conflict', message);
export const invalidInput = (message: string) => new AppError('invalid_input', message);

/** What a lookup found, or not_found with `message`: the one rule of every registry's `require`. */
export function foundOr<T>(found: T | null | undefined, message: string): T {
  if (found === null || found === undefined) throw notFound(message);
  return found;
}

/** PostgreSQL unique_violation: lets repositories turn a race into a clear conflict. */
export const isUniqueViolation = (error: unknown) => (error as { code?: string })?.code === '23505';
