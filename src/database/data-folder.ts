import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { StartupRefusal } from '../common/errors/startup-refusal.js';

/** DATA_DIR cannot hold the embedded database: one line naming it. */
export class DataFolderUnusable extends StartupRefusal {}

/** Creates DATA_DIR when missing; refuses one that is a file or cannot be written. */
export async function prepareDataFolder(dataDir: string): Promise<void> {
  try {
    await mkdir(dataDir, { recursive: true });
    await access(dataDir, constants.W_OK | constants.X_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const what = code === 'EEXIST' || code === 'ENOTDIR' ? 'is a file, not a folder' : `cannot be created or written (${code})`;
    throw new DataFolderUnusable(`DATA_DIR ${dataDir} ${what}: set DATA_DIR to a folder this account may write, or DATABASE_URL to a PostgreSQL of your own`);
  }
}
