import type pg from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

/**
 * A statement on a hot path, run as a named prepared statement on TypeORM's own pool, so
 * PostgreSQL parses and plans it once per connection rather than on every request (for the
 * token grants' one-statement transactions that was as much as executing them). Autocommit
 * only: work inside a transaction goes through the transaction's manager.
 */
export class PreparedStatement<Row extends object> {
  constructor(
    readonly name: string,
    readonly text: string,
  ) {}

  async run(dataSource: DataSource, values: unknown[]): Promise<Row[]> {
    const pool = (dataSource.driver as PostgresDriver).master as pg.Pool;
    return (await pool.query<Row>({ name: this.name, text: this.text, values })).rows;
  }
}
