import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { StartupRefusal } from '../common/errors/startup-refusal.js';
import { isProcessAlive } from './process-alive.js';

/** Another live service holds the data folder: starting beside it would take its database over. */
export class DataFolderInUse extends StartupRefusal {
  constructor(dataDir: string, pid: number) {
    super(`DATA_DIR ${dataDir} is in use by another voyage-connect service (pid ${pid}): stop it first, or give this one its own DATA_DIR or a DATABASE_URL`);
  }
}

/**
 * One live service per embedded data folder: its pid in `service.pid`, created exclusively. A
 * file whose process is gone (a killed run) is taken over. Returns the release, which removes the
 * file if it is still this process's.
 */
export async function lockDataFolder(dataDir: string): Promise<() => Promise<void>> {
  const path = join(dataDir, 'service.pid');
  await mkdir(dataDir, { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const file = await open(path, 'wx', 0o600);
      await file.writeFile(String(process.pid));
      await file.close();
      return async () => {
        if ((await readFile(path, 'utf8').catch(() => '')) === String(process.pid)) await rm(path, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(await readFile(path, 'utf8').catch(() => ''));
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isProcessAlive(holder)) throw new DataFolderInUse(dataDir, holder);
    await rm(path, { force: true });
  }
  throw new Error(`could not lock DATA_DIR ${dataDir}`);
}
