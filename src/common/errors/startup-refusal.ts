/**
 * A reason the service or the CLI cannot start that the operator fixes (a setting, a port taken,
 * the database): its message is the one line they read, naming the setting and the fix, without
 * a stack and without any secret.
 */
export class StartupRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
