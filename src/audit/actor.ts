import { AsyncLocalStorage } from 'node:async_hooks';
import { userInfo } from 'node:os';
import type { Requester } from '../common/http/requester.js';

/** Who makes an administrative change: an operator at the CLI (their OS user), or a client through HTTP. */
export type Actor = { kind: 'operator'; name: string } | { kind: 'client'; clientId: string; requester?: Requester };

const acting = new AsyncLocalStorage<Actor>();
let processActor: Actor | undefined;

/**
 * Runs `work` as `actor`: every administrative change it makes, however deep, is recorded as theirs.
 * The entry points say who acts (the CLI's run, the admin routes' interceptor), so no service
 * method between them and the audit trail needs an actor parameter.
 */
export function actingAs<T>(actor: Actor, work: () => T): T {
  return acting.run(actor, work);
}

/** Who acts where no entry point said so: none in the service, where a change without one is a bug. */
export function setProcessActor(actor: Actor | undefined): void {
  processActor = actor;
}

/** The actor of the change under way; throws when nobody said who acts (a change must never go unattributed). */
export function currentActor(): Actor {
  const actor = acting.getStore() ?? processActor;
  if (!actor) throw new Error('an administrative change without an actor: run it with actingAs()');
  return actor;
}

/** The operator at this machine's CLI: the OS user running it (SUDO_USER when it runs through sudo). */
export function operatorAtThisMachine(env: NodeJS.ProcessEnv = process.env): Actor {
  let name = env.SUDO_USER;
  if (!name) {
    try {
      name = userInfo().username;
    } catch {
      // A user id without a passwd entry (some containers): the id still tells who.
      name = `uid ${process.getuid?.() ?? 'unknown'}`;
    }
  }
  return { kind: 'operator', name };
}
