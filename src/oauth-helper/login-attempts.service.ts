import { Injectable } from '@nestjs/common';
import type { Requester } from '../common/http/requester.js';
import { SecurityEvents } from '../common/logging/security-events.js';
import { isPlausibleLogin } from '../users/dto/create-user.dto.js';
import { PasswordCheckGateService } from '../users/password-check-gate.service.js';
import type { UserEntity } from '../users/user.entity.js';
import { type Authentication, UsersService } from '../users/users.service.js';
import { LoginThrottleService } from '../users/login-throttle.service.js';
import { waitInWords } from './wait-in-words.js';

export type LoginAttempt =
  | { outcome: 'signed-in'; user: UserEntity }
  | { outcome: 'wrong' }
  /** Too many failures: try again in `waitSeconds`. */
  | { outcome: 'throttled'; waitSeconds: number }
  /** Every password check slot is taken: try again shortly. */
  | { outcome: 'busy' };

/** Where an attempt comes from: the client whose sign-in it is, and who sent it. */
export interface AttemptSource {
  clientId: string;
  requester: Requester;
}

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
export class LoginAttemptsService {
  constructor(
    private readonly throttle: LoginThrottleService,
    private readonly gate: PasswordCheckGateService,
    private readonly users: UsersService,
    private readonly events: SecurityEvents,
  ) {}

  async attempt(username: string, password: string, { clientId, requester }: AttemptSource): Promise<LoginAttempt> {
    if (!isPlausibleLogin(username, password)) {
      const reason = isPlausibleLogin(username, '') ? 'wrong_password' : 'unknown_user';
      this.events.emit('login.failed', { reason, clientId, username: username.slice(0, 200) }, requester);
      return { outcome: 'wrong' };
    }
    const keys = { username, address: requester.address };
    const throttled = (waitSeconds: number): LoginAttempt => {
      this.events.emit('login.throttled', { reason: 'slow_down', clientId, username, waitSeconds }, requester);
      return { outcome: 'throttled', waitSeconds };
    };
    const wait = await this.throttle.waitSeconds(keys);
    if (wait > 0) return throttled(wait);
    const release = this.gate.tryEnter();
    if (!release) return { outcome: 'busy' };
    let checked: Authentication;
    try {
      // Counted before the password is checked, so parallel attempts cannot outrun the count.
      if (!(await this.throttle.reserve(keys))) return throttled(Math.max(1, await this.throttle.waitSeconds(keys)));
      checked = await this.users.authenticate(username, password);
    } finally {
      release();
    }
    if ('refused' in checked) {
      this.events.emit('login.failed', { reason: checked.refused, clientId, username, userId: checked.userId }, requester);
      return { outcome: 'wrong' };
    }
    await this.throttle.recordSuccess(keys);
    return { outcome: 'signed-in', user: checked.user };
  }
}
