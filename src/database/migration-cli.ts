import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadProcessEnv } from '../config/env.js';
import { dataSourceOptions } from './data-source.js';
import { openDatabaseServer } from './database-server.js';

/**
 * Data source for the TypeORM CLI (`npm run migration:run`, `migration:revert`). With the
 * embedded database, a server this command starts is left running and is reused at next start.
 */
async function migrationDataSource() {
  const env = loadProcessEnv();
  const server = await openDatabaseServer(env, 'cli', (line) => console.error(line));
  return new DataSource(await dataSourceOptions(server.url, 2));
}

export default migrationDataSource();
