import type pg from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

/**
 * A statement on a hot path, run as a named prepared statement, so PostgreSQL parses and plans it
 * once per connection rather than on every request (for the token grants' one-statement
 * transactions that was as much as executing them). `run` takes a connection from TypeORM's pool
 * (autocommit); `runIn` uses the connection of the transaction a manager belongs to.
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

  async runIn(manager: EntityManager, values: unknown[]): Promise<Row[]> {
    if (!manager.queryRunner) throw new Error(`${this.name}: runIn needs the manager of a transaction`);
    // The transaction's connection, already taken: connect() hands it back.
    const connection = (await manager.queryRunner.connect()) as pg.PoolClient;
    return (await connection.query<Row>({ name: this.name, text: this.text, values })).rows;
  }
}
