import { type DynamicModule, Module, type Type } from '@nestjs/common';
import { MODULE_METADATA } from '@nestjs/common/constants.js';
import { CommandMeta } from 'nest-commander/src/constants.js';

/** The command classes a module provides (nest-commander's @Command), without building the module. */
export function commandsOf(module: Type): Type[] {
  const providers: unknown[] = Reflect.getMetadata(MODULE_METADATA.PROVIDERS, module) ?? [];
  return providers.filter((provider): provider is Type => typeof provider === 'function' && Reflect.hasMetadata(CommandMeta, provider));
}

/** The name a command class is run by. */
export const commandName = (command: Type): string => (Reflect.getMetadata(CommandMeta, command) as { name: string }).name;

/**
 * The commands as definitions only, for `--help` and usage errors: each command is an instance
 * whose constructor never ran, so nothing it depends on (a database above all) is built or opened.
 */
@Module({})
export class CommandDefinitionsModule {
  static of(commands: Type[]): DynamicModule {
    return {
      module: CommandDefinitionsModule,
      providers: commands.map((command) => ({ provide: command, useValue: Object.create(command.prototype) as object })),
    };
  }
}
