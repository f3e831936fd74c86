/** The URL of the database the app runs on, for connections outside the pool (LISTEN needs its own). */
export class DatabaseUrl {
  constructor(readonly value: string) {}
}
