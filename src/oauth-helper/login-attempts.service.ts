import { Injectable } from '@nestjs/common';
import { isPlausibleLogin } from '../users/dto/create-user.dto.js';
import { PasswordCheckGate } from '../users/password-check-gate.js';
import type { UserEntity } from '../users/user.entity.js';
import { UsersService } from '../users/users.service.js';
import { LoginThrottle } from '../users/login-throttle.service.js';
import { waitInWords } from './wait-in-words.js';

export type LoginAttempt =
  | { outcome: 'signed-in'; user: UserEntity }
  | { outcome: 'wrong' }
  /** Too many failures: try again in `waitSeconds`. */
  | { outcome: 'throttled'; waitSeconds: number }
  /** Every password check slot is taken: try again shortly. */
  | { outcome: 'busy' };

/** What a sign-in form says, and answers, for an attempt that did not sign in. */
export function signInRefusal(attempt: Exclude<LoginAttempt, { outcome: 'signed-in' }>): { status: number; message: string; retryAfter?: number } {
  switch (attempt.outcome) {
    case 'wrong':
      return { status: 200, message: 'Wrong username or password.' };
    case 'throttled':
      return { status: 429, message: `Too many failed attempts. Try again in ${waitInWords(attempt.waitSeconds)}.`, retryAfter: attempt.waitSeconds };
    case 'busy':
      return { status: 503, message: 'Too many sign-ins at once. Please try again in a moment.', retryAfter: 1 };
  }
}

/**
 * One sign-in attempt of a portal user, in the order that keeps it cheap to refuse: a username
 * that cannot exist costs nothing, a slowed-down one a lock-free read, a full instance no
 * database work at all; only then is the attempt counted and the password hashed.
 */
@Injectable()
export class LoginAttempts {
  constructor(
    private readonly throttle: LoginThrottle,
    private readonly gate: PasswordCheckGate,
    private readonly users: UsersService,
  ) {}

  async attempt(username: string, password: string, address: string): Promise<LoginAttempt> {
    if (!isPlausibleLogin(username, password)) return { outcome: 'wrong' };
    const keys = { username, address };
    const wait = await this.throttle.waitSeconds(keys);
    if (wait > 0) return { outcome: 'throttled', waitSeconds: wait };
    const release = this.gate.tryEnter();
    if (!release) return { outcome: 'busy' };
    let user: UserEntity | null;
    try {
      // Counted before the password is checked, so parallel attempts cannot outrun the count.
      if (!(await this.throttle.reserve(keys))) return { outcome: 'throttled', waitSeconds: Math.max(1, await this.throttle.waitSeconds(keys)) };
      user = await this.users.authenticate(username, password);
    } finally {
      release();
    }
    if (!user) return { outcome: 'wrong' };
    await this.throttle.recordSuccess(keys);
    return { outcome: 'signed-in', user };
  }
}
