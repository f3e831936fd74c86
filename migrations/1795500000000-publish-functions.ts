import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The publish statement as PL/pgSQL functions, so that a publish transaction can be one round
 * trip (NotificationsRepository): each round trip costs node and PostgreSQL about as much CPU as
 * storing a small batch, and a transaction of five (BEGIN, locks, INSERT, NOTIFY, COMMIT) held its
 * publishes through five turns of a busy event loop. PL/pgSQL keeps each statement's plan for the
 * session, as the prepared statements did, and in READ COMMITTED takes a fresh snapshot for each
 * statement, so the INSERT sees everything committed before its locks were had.
 *
 * publish_insert: one result row per proposed publish, in its position: the id stored for it (now
 * or before) and whether this position stored it; no id for a recipient that is not a client. Each
 * result is found by position, and a publish is matched with its row by PostgreSQL's own
 * comparison of the values it stored (a uuid in any letter case is one uuid), never by text the
 * caller sent. Of the publishes of one (recipient, correlation id, status), only the first is
 * proposed: PostgreSQL refuses an upsert that touches one row twice in a command, and the later
 * ones are its duplicates. The rows are inserted in position order (seq follows it). created_at is
 * the clock at insert, after the lock wait: a connection that opened before it compares it with
 * its own opening time (see deliveryStarts). A row stored before is looked up (by the dedupe index,
 * and only when nothing was stored: coalesce evaluates no more than it needs) in the statement's
 * snapshot, which sees every earlier publish of the recipient: those commit before its lock is
 * released, and the lock was taken before this statement began. The wake-ups given are sent
 * (delivered at commit) when anything was stored.
 *
 * Both keep one generic plan: with PostgreSQL's default, a statement with array parameters is
 * planned anew at every call, which cost as much as the rest of a one-publish transaction (about
 * 200 µs of PostgreSQL's CPU of 450).
 *
 * publish_if_free: the same, in a transaction of its own (the caller's implicit one), when every
 * recipient's publish lock is free at once; when one is held elsewhere it stores nothing and
 * returns no rows, and the caller takes the transaction that waits.
 */
export class PublishFunctions1795500000000 implements MigrationInterface {
  name = 'PublishFunctions1795500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION publish_insert(recipients text[], correlation_ids uuid[], statuses text[], payloads text[], published_bys text[],
                                     retentions float8[], wake_channels text[], wake_payloads text[])
      RETURNS TABLE ("position" bigint, id uuid, stored boolean) LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY
        WITH n AS (
           SELECT *, row_number() OVER (PARTITION BY recipient, correlation_id, status ORDER BY position) = 1 AS first
           FROM unnest(recipients, correlation_ids, statuses, payloads, published_bys, retentions) WITH ORDINALITY
             AS n (recipient, correlation_id, status, payload, published_by, retention, position)),
         inserted AS (
           INSERT INTO notifications (recipient, correlation_id, status, payload, published_by, expires_at, created_at)
           SELECT n.recipient, n.correlation_id, n.status, n.payload, n.published_by, now() + make_interval(secs => n.retention), clock_timestamp()
           FROM n WHERE n.first AND EXISTS (SELECT 1 FROM clients c WHERE c.id = n.recipient AND c.deleted_at IS NULL)
           ORDER BY n.position
           ON CONFLICT (recipient, correlation_id, status) DO UPDATE
             SET seq = nextval('notifications_seq_seq'), id = gen_random_uuid(), payload = EXCLUDED.payload,
                 published_by = EXCLUDED.published_by, created_at = clock_timestamp(), expires_at = EXCLUDED.expires_at
             WHERE notifications.expires_at <= now()
           RETURNING notifications.id, notifications.recipient, notifications.correlation_id, notifications.status),
         woken AS (
           SELECT count(pg_notify(w.channel, w.payload)) AS notified
           FROM unnest(wake_channels, wake_payloads) AS w (channel, payload)
           WHERE EXISTS (SELECT 1 FROM inserted))
        SELECT n.position,
          coalesce(i.id, (
            SELECT s.id FROM notifications s
            WHERE s.recipient = n.recipient AND s.correlation_id = n.correlation_id AND s.status = n.status AND s.expires_at > now())),
          i.id IS NOT NULL AND n.first
        FROM n LEFT JOIN inserted i USING (recipient, correlation_id, status) CROSS JOIN woken
        ORDER BY n.position;
      END
      $fn$`);
    await queryRunner.query(`
      CREATE FUNCTION publish_if_free(lock_class integer, wait text, recipients text[], correlation_ids uuid[], statuses text[], payloads text[],
                                      published_bys text[], retentions float8[], wake_channels text[], wake_payloads text[])
      RETURNS TABLE ("position" bigint, id uuid, stored boolean) LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
      BEGIN
        PERFORM set_config('lock_timeout', wait, true);
        IF EXISTS (SELECT 1 FROM (SELECT DISTINCT hashtext(r) AS key FROM unnest(recipients) AS r) AS keys
                   WHERE NOT pg_try_advisory_xact_lock(lock_class, keys.key)) THEN
          RETURN;
        END IF;
        RETURN QUERY SELECT * FROM publish_insert(recipients, correlation_ids, statuses, payloads, published_bys, retentions, wake_channels, wake_payloads);
      END
      $fn$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION publish_if_free(integer, text, text[], uuid[], text[], text[], text[], float8[], text[], text[])');
    await queryRunner.query('DROP FUNCTION publish_insert(text[], uuid[], text[], text[], text[], float8[], text[], text[])');
  }
}
