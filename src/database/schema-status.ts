/** What the start-up migration run did, for the one line the service logs when it is ready. */
export class SchemaStatus {
  /** Names of the migrations this start applied (empty: the schema was already current). */
  applied: string[] = [];
}
