import { Option } from 'nest-commander';
import { OptionMeta } from 'nest-commander/src/constants.js';
import { collect } from '../../common/cli/output.js';
import { resolveGrantAlias } from '../client.entity.js';
import { HEARTBEAT_FLAGS, parseHeartbeat } from './heartbeat-option.js';
import { SCOPE_DESCRIPTION_FLAGS } from './scope-description-option.js';

/** The options client:create and client:update share, as commander hands them to `run`. */
export interface ClientOptions {
  name?: string;
  grant?: string[];
  redirect?: string[];
  scope?: string[];
  scopeDescription?: string[];
  signIn?: string[];
  public?: boolean;
  postLogoutRedirect?: string[];
  idTokenAlg?: string;
  heartbeat?: number | string;
}

type Parse = (value: string, previous?: string[]) => unknown;
const single: Parse = (value) => value;
const repeatable: Parse = (value, previous) => collect(value, previous);

/** Each shared option: its flags, and how its value is read (a repeatable one is collected into a list). */
const SHARED: Record<keyof ClientOptions, { flags: string; parse: Parse }> = {
  name: { flags: '--name <name>', parse: single },
  grant: { flags: '--grant <grant>', parse: (value, previous) => collect(resolveGrantAlias(value), previous) },
  redirect: { flags: '--redirect <pattern>', parse: repeatable },
  scope: { flags: '--scope <scope>', parse: repeatable },
  scopeDescription: { flags: SCOPE_DESCRIPTION_FLAGS, parse: repeatable },
  signIn: { flags: '--sign-in <method>', parse: repeatable },
  public: { flags: '--public', parse: () => true },
  postLogoutRedirect: { flags: '--post-logout-redirect <url>', parse: repeatable },
  idTokenAlg: { flags: '--id-token-alg <alg>', parse: single },
  heartbeat: { flags: HEARTBEAT_FLAGS, parse: parseHeartbeat },
};

/**
 * Gives a client command the shared options, each worded by `help` (create names the defaults,
 * update what a list given replaces): their flags and parsing are written here once. Each
 * becomes a `parse<Option>` method of the command with nest-commander's @Option, as if written in it.
 */
export const SharedClientOptions =
  (help: Record<keyof ClientOptions, string>): ClassDecorator =>
  (command) => {
    const own = Object.getOwnPropertyNames(command.prototype).filter((key) => isOption(Object.getOwnPropertyDescriptor(command.prototype, key)?.value));
    for (const [option, { flags, parse }] of Object.entries(SHARED) as [keyof ClientOptions, (typeof SHARED)[keyof ClientOptions]][]) {
      const method = `parse${option[0].toUpperCase()}${option.slice(1)}`;
      // A function of this command's own: @Option keeps its metadata on the function.
      const descriptor: PropertyDescriptor = { value: (value: string, previous?: string[]) => parse(value, previous), writable: true, configurable: true };
      Object.defineProperty(command.prototype, method, descriptor);
      Option({ flags, description: help[option] })(command.prototype, method, descriptor);
    }
    // The command's own options after the shared ones, in --help as in --file's field list.
    for (const key of own) {
      const descriptor = Object.getOwnPropertyDescriptor(command.prototype, key)!;
      delete command.prototype[key as keyof typeof command.prototype];
      Object.defineProperty(command.prototype, key, descriptor);
    }
  };

const isOption = (value: unknown) => typeof value === 'function' && Reflect.getMetadata(OptionMeta, value) !== undefined;
