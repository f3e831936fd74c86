import type { Type } from '@nestjs/common';
import { commandName, commandsOf } from './command-definitions.module.js';

/** What a command line needs: the one module that runs its command, or only the definitions of every command. */
export type Selection = { module: Type } | { definitions: Type[] };

/**
 * Picks from `groups` (command modules keyed by the part of a command's name before ":") what the
 * arguments need. A known command is run by its group's module alone. Help (`--help`, `-h`, `help`,
 * no command) and an unknown command need only the definitions, to print help or a usage error.
 */
export async function selectCommands(args: string[], groups: Record<string, () => Promise<Type>>): Promise<Selection> {
  const end = args.indexOf('--');
  const options = end < 0 ? args : args.slice(0, end);
  const name = options.find((arg) => !arg.startsWith('-'));
  const load = name === undefined ? undefined : groups[name.split(':')[0]];
  if (load && !options.includes('--help') && !options.includes('-h')) {
    const module = await load();
    if (commandsOf(module).some((command) => commandName(command) === name)) return { module };
  }
  const modules = await Promise.all(Object.values(groups).map((loadGroup) => loadGroup()));
  return { definitions: modules.flatMap(commandsOf) };
}
