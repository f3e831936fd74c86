import { runCli } from '../setup/processes.js';

export interface Credentials {
  id: string;
  secret: string;
}

export interface ClientSpec {
  name: string;
  /** `notification:publish` for a publisher; subscribers use the default scope. */
  scope?: string;
}

/** Registers client-credentials clients with the admin CLI, as an operator would: one `client:create --file -` for all of them. */
export async function createClients(databaseUrl: string, specs: ClientSpec[]): Promise<Credentials[]> {
  const lines = specs.map(({ name, scope }) => JSON.stringify({ name, grant: ['client_credentials'], ...(scope ? { scope } : {}) }));
  const result = await runCli(['client:create', '--file', '-'], { env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, stdin: lines.join('\n') + '\n' });
  if (result.code !== 0) throw new Error(`client:create --file failed (${result.code ?? result.signal}): ${result.stderr}`);
  const printed = JSON.parse(result.stdout) as { client_id: string; client_secret: string; name: string }[];
  return printed.map((client) => ({ id: client.client_id, secret: client.client_secret }));
}
