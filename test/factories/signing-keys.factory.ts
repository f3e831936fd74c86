import { query } from '../setup/database.js';

/** A row of signing_keys as PostgreSQL stores it. */
export interface StoredKeyRow {
  kid: string;
  alg: string;
  private_key_pem: string | null;
  private_key_encrypted: Buffer | null;
  retired_lifetime_seconds: number;
  created_at: Date;
  activates_at: Date;
  retired_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
}

/** Every stored signing key, oldest first (ES256 before RS256 when made together), read straight from the database. */
export const storedKeys = (databaseUrl: string) => query<StoredKeyRow>(databaseUrl, 'SELECT * FROM signing_keys ORDER BY created_at, alg');
