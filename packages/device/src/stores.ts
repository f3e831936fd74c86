import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * Where a device keeps what must survive a restart: its user's tokens (`user`), its client
 * tokens (`client`) and its place in the notification stream (`position`). Values are JSON. A
 * device may keep them anywhere (a keychain, its own database) by writing these two methods.
 */
export interface Store {
  get<T>(key: string): Promise<T | undefined>;
  /** Stores `value` (undefined removes the key). Resolves once it would survive a crash. */
  set(key: string, value: unknown): Promise<void>;
}

/** Keeps everything in memory: for tests, and devices that sign in at every start. */
export class MemoryStore implements Store {
  private readonly values = new Map<string, string>();

  async get<T>(key: string): Promise<T | undefined> {
    const value = this.values.get(key);
    return value === undefined ? undefined : (JSON.parse(value) as T);
  }

  async set(key: string, value: unknown): Promise<void> {
    if (value === undefined) this.values.delete(key);
    else this.values.set(key, JSON.stringify(value));
  }
}

/**
 * One JSON file, readable by its owner only, rewritten whole on each change: written to a
 * temporary file, flushed to disk, then renamed over the old one, so a crash leaves the old
 * contents or the new, never a mix. One process per file.
 */
export class FileStore implements Store {
  private values: Promise<Record<string, unknown>> | undefined;
  /** Writes, one after the other, in the order of the calls. */
  private writes: Promise<void> = Promise.resolve();

  constructor(readonly path: string) {}

  async get<T>(key: string): Promise<T | undefined> {
    return (await this.load())[key] as T | undefined;
  }

  set(key: string, value: unknown): Promise<void> {
    const write = this.writes.then(async () => {
      const values = await this.load();
      if (value === undefined) delete values[key];
      else values[key] = JSON.parse(JSON.stringify(value));
      await writeAtomically(this.path, `${JSON.stringify(values, null, 2)}\n`);
    });
    this.writes = write.catch(() => {});
    return write;
  }

  private load(): Promise<Record<string, unknown>> {
    this.values ??= readFile(this.path, 'utf8').then(
      (text) => JSON.parse(text) as Record<string, unknown>,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return {};
        throw error;
      },
    );
    return this.values;
  }
}

async function writeAtomically(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = join(dirname(path), `.${process.pid}.${Date.now()}.tmp`);
  const file = await open(temporary, 'w', 0o600);
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, path);
  // The rename itself is durable once the folder is flushed.
  const folder = await open(dirname(path), 'r');
  await folder.sync().finally(() => folder.close());
}
