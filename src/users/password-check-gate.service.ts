import { Injectable } from '@nestjs/common';
import { Env } from '../config/env.js';

/**
 * At most PASSWORD_CHECK_CONCURRENCY argon2 checks at once on this instance. A check beyond them
 * is refused at once (the caller answers 503) rather than queued: queued checks would wait on
 * libuv's thread pool, which file and DNS work share, and a flood of sign-ins would slow the
 * whole instance down instead of only itself.
 */
@Injectable()
export class PasswordCheckGateService {
  private running = 0;
  private readonly limit: number;

  constructor(env: Env) {
    this.limit = env.PASSWORD_CHECK_CONCURRENCY;
  }

  /** A function that gives the slot back, or null when every slot is taken. */
  tryEnter(): (() => void) | null {
    if (this.running >= this.limit) return null;
    this.running++;
    let released = false;
    return () => {
      if (!released) this.running--;
      released = true;
    };
  }
}
