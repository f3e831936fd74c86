import { runCli } from '../setup/processes.js';

export interface Credentials {
  id: string;
  secret: string;
}

/** The CLI runs a whole Nest application each time: a handful at once keeps the 2 cores busy, not swamped. */
const CLI_PARALLELISM = 4;

export interface ClientSpec {
  name: string;
  /** `notification:publish` for a publisher; subscribers use the default scope. */
  scope?: string;
}

/** Registers client-credentials clients with the admin CLI (`client:create`), as an operator would. */
export async function createClients(databaseUrl: string, specs: ClientSpec[]): Promise<Credentials[]> {
  const created: Credentials[] = new Array(specs.length);
  let next = 0;
  const worker = async () => {
    while (next < specs.length) {
      const index = next++;
      created[index] = await createClient(databaseUrl, specs[index].name, specs[index].scope);
    }
  };
  await Promise.all(Array.from({ length: CLI_PARALLELISM }, worker));
  return created;
}

async function createClient(databaseUrl: string, name: string, scope?: string): Promise<Credentials> {
  const args = ['client:create', '--name', name, '--grant', 'client_credentials', ...(scope ? ['--scope', scope] : [])];
  const result = await runCli(args, { env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' } });
  if (result.code !== 0) throw new Error(`client:create ${name} failed (${result.code ?? result.signal}): ${result.stderr}`);
  const printed = JSON.parse(result.stdout) as { client_id: string; client_secret: string };
  return { id: printed.client_id, secret: printed.client_secret };
}
