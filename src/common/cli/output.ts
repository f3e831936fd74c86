/** Every command prints exactly one JSON document on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** commander option parser for repeatable flags (`--grant a --grant b`). */
export const collect = (value: string, previous: string[] = []) => [...previous, value];
