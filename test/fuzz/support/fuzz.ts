import { mkdirSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { exchange, type Outcome, type SendOptions, serialize } from './http.js';
import { type FuzzRequest, toWire, valueCategory } from './requests.js';
import { World } from './world.js';

/** Runs per property: small inside `npm test`, raised by `npm run test:fuzz` (FUZZ_RUNS). */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 30);
/** Fixed, so `npm test` is repeatable; FUZZ_SEED replays or varies a run. */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20261124);
/** Per property, shrinking included (fast-check reports the smallest counterexample found by then). */
const TIME_LIMIT_MS = Number(process.env.FUZZ_TIME_LIMIT_MS ?? 20_000 + FUZZ_RUNS * 250);
/** For vitest's `it`: the property's budget plus room for the requests still in flight. */
export const TEST_TIMEOUT_MS = TIME_LIMIT_MS + 30_000;
/** An answer later than this is a hang. */
export const REQUEST_TIMEOUT_MS = 5_000;

/** The tables whose row counts a refused request must leave alone (login_failures changes on a wrong password by design). */
export const TABLES = [
  'clients',
  'portal_users',
  'grants',
  'authorizations',
  'authorization_codes',
  'refresh_tokens',
  'revoked_access_tokens',
  'notifications',
  'delivery_cursors',
  'device_codes',
  'signing_keys',
] as const;
export type Table = (typeof TABLES)[number];
export type Counts = Record<Table, number>;

/** The process must survive every input: anything uncaught in the test process (the app runs in it) fails the suite. */
const processErrors: string[] = [];
process.on('uncaughtException', (error) => processErrors.push(`uncaughtException: ${error?.stack ?? error}`));
process.on('unhandledRejection', (reason) => processErrors.push(`unhandledRejection: ${(reason as Error)?.stack ?? reason}`));

export function expectProcessAlive(): void {
  if (processErrors.length > 0) throw new Error(`the process hit ${processErrors.length} uncaught error(s):\n${processErrors.join('\n')}`);
}

/** Which tables an accepted answer may have changed (every table when absent). */
export type StoreRule = (request: FuzzRequest, outcome: Extract<Outcome, { kind: 'response' }>) => readonly Table[] | 'any';

/** A route's own property of an answer, checked after the common ones: the request as generated and as sent, its placeholders' values. */
export type Inspection = (sent: {
  request: FuzzRequest;
  filled: FuzzRequest;
  values: Map<string, string>;
  outcome: Extract<Outcome, { kind: 'response' }>;
}) => void | Promise<void>;

/** Refused (4xx) answers store nothing; accepted ones may store anything. */
export const refusalsStoreNothing: StoreRule = (_request, outcome) => (outcome.status >= 400 ? [] : 'any');

/**
 * One test file's fuzzing: sends generated requests through the raw client, checks the
 * invariants after each, and counts what was sent.
 */
export class FuzzSession {
  requests = 0;
  /** WebSocket frames sent on open streams. */
  frames = 0;
  readonly shapes = new Map<string, number>();
  readonly statuses = new Map<string, number>();
  serverErrors = 0;
  noAnswers = 0;
  timeouts = 0;
  readonly failures: string[] = [];
  /** Properties the time limit stopped before their runs were done (printed, so a short run is never mistaken for a full one). */
  readonly cutShort: string[] = [];
  private db?: pg.Client;
  /** The service under fuzz, started before the file's first test (see fuzzFile). */
  world!: World;

  constructor(readonly name: string) {}

  /** Resolves the placeholders and sends; counted, not yet judged. */
  async send(request: FuzzRequest, options: Pick<SendOptions, 'keepUpgraded' | 'keepStreaming'> = {}): Promise<Outcome> {
    const filled = await this.world.fill(request);
    return this.sendFilled(request, filled, options);
  }

  async sendFilled(request: FuzzRequest, filled: FuzzRequest, options: Pick<SendOptions, 'keepUpgraded' | 'keepStreaming'> = {}): Promise<Outcome> {
    const wire = serialize(toWire(filled), this.world.host);
    const outcome = await exchange(this.world.port, wire, filled.method, { timeoutMs: REQUEST_TIMEOUT_MS, ...options });
    this.record(request, outcome);
    return outcome;
  }

  record(request: FuzzRequest, outcome: Outcome): void {
    this.requests++;
    const shape = `${request.route} × ${request.kind}:${valueCategory(request)}`;
    this.shapes.set(shape, (this.shapes.get(shape) ?? 0) + 1);
    const status = outcome.kind === 'response' ? String(outcome.status) : outcome.kind;
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    if (outcome.kind === 'response' && outcome.status >= 500) this.serverErrors++;
    if (outcome.kind === 'no-answer' || outcome.kind === 'garbage') this.noAnswers++;
    if (outcome.kind === 'timeout') this.timeouts++;
    // The app's captured log lines are only read for the request just sent: keep long runs from hoarding them.
    const logs = this.world.app.logs;
    if (logs.length > 50_000) logs.splice(0, logs.length - 1_000);
  }

  /** Frames sent on an open stream count as shapes of their own ("WS frame × kind"). */
  recordFrames(kinds: string[]): void {
    for (const kind of kinds) {
      this.frames++;
      const shape = `WS frame × ${kind}`;
      this.shapes.set(shape, (this.shapes.get(shape) ?? 0) + 1);
    }
  }

  /** An HTTP answer below 500, within the timeout. */
  expectAnswered(request: FuzzRequest, outcome: Outcome): asserts outcome is Extract<Outcome, { kind: 'response' }> {
    if (outcome.kind === 'response' && outcome.status < 500) return;
    const what =
      outcome.kind === 'response'
        ? `${outcome.status} ${outcome.body.subarray(0, 300).toString('utf8')}${this.serverLog(outcome.headers['x-request-id'])}`
        : outcome.kind === 'timeout'
          ? `no answer within ${outcome.ms} ms (received: ${JSON.stringify(outcome.received)})`
          : `no HTTP answer: ${outcome.kind} (${outcome.detail}) after ${outcome.ms} ms`;
    throw new Error(`${request.route} [${request.kind}] → ${what}`);
  }

  /** Where the service's log stands now: `expectNothingLoggedSince` reads from here. */
  logMark(): number {
    return this.world.app.logs.length;
  }

  /** The service logged no error, and no stack trace at any level, since `mark`: bad input is refused, never a failure. */
  expectNothingLoggedSince(mark: number, what: string): void {
    const logs = this.world.app.logs;
    // record() trims a long log: the mark may point past its end.
    const lines = logs.slice(mark <= logs.length ? mark : 0);
    const bad = lines.filter((line) => line.level === 'error' || line.level === 'fatal' || /\n\s+at \S/.test(JSON.stringify(line).replaceAll('\\n', '\n')));
    if (bad.length > 0) throw new Error(`after ${what} the service logged: ${bad.map((line) => `[${String(line.level)}] ${String(line.msg)}`.slice(0, 300)).join(' | ')}`);
  }

  /** The service's own error lines for a request id, to say why it failed. */
  serverLog(requestId: string | undefined): string {
    if (!requestId) return '';
    const lines = this.world.app.logs.filter((line) => line.reqId === requestId && (line.level === 'error' || line.level === 'fatal' || line.level === 'warn'));
    const text = lines.map((line) => {
      const err = line.err as { type?: string; message?: string; stack?: string } | undefined;
      return `${line.msg}${err ? ` [${err.type}: ${err.message}] ${err.stack?.split('\n').slice(1, 3).join(' | ').trim() ?? ''}` : ''}`;
    });
    return text.length > 0 ? `\n  server log: ${text.join('\n  server log: ')}` : '';
  }

  async counts(): Promise<Counts> {
    if (!this.db) {
      this.db = new pg.Client({ connectionString: this.world.app.databaseUrl });
      await this.db.connect();
    }
    const { rows } = await this.db.query(`SELECT ${TABLES.map((table) => `(SELECT count(*)::int FROM ${table}) AS ${table}`).join(', ')}`);
    return rows[0] as Counts;
  }

  expectStoredOnly(before: Counts, after: Counts, allowed: readonly Table[] | 'any', request: FuzzRequest, outcome: Outcome): void {
    if (allowed === 'any') return;
    const changed = TABLES.filter((table) => before[table] !== after[table] && !allowed.includes(table));
    if (changed.length === 0) return;
    const status = outcome.kind === 'response' ? outcome.status : outcome.kind;
    throw new Error(
      `${request.route} [${request.kind}] answered ${status} yet stored: ${changed.map((table) => `${table} ${before[table]} → ${after[table]}`).join(', ')}`,
    );
  }

  /**
   * The common property: each generated request gets an answer below 500 in time, the process
   * survives, and a refused request stores nothing (`stores` says what an accepted one may store).
   */
  checkRequests(
    arbitrary: fc.Arbitrary<FuzzRequest>,
    options: { stores?: StoreRule; beforeEach?: () => Promise<unknown>; runs?: number; examples?: FuzzRequest[]; inspect?: Inspection } = {},
  ) {
    const stores = options.stores ?? refusalsStoreNothing;
    return this.check(
      arbitrary,
      async (request) => {
        await options.beforeEach?.();
        const { filled, values } = await this.world.fillWithValues(request);
        const before = await this.counts();
        const outcome = await this.sendFilled(request, filled);
        this.expectAnswered(request, outcome);
        const after = await this.counts();
        this.expectStoredOnly(before, after, stores(request, outcome), request, outcome);
        await options.inspect?.({ request, filled, values, outcome });
        expectProcessAlive();
      },
      options.runs,
      options.examples,
    );
  }

  /**
   * Runs `predicate` over `arbitrary` with the suite's seed and budget, after the `examples`
   * (shapes that must always be tried, whatever the seed draws); a failure throws with its
   * shrunk counterexample.
   */
  async check<T>(arbitrary: fc.Arbitrary<T>, predicate: (value: T) => Promise<void>, runs = FUZZ_RUNS, examples: T[] = []): Promise<void> {
    const details = await fc.check(fc.asyncProperty(arbitrary, predicate), {
      seed: FUZZ_SEED,
      numRuns: runs + examples.length,
      examples: examples.map((example): [T] => [example]),
      plugins: [fc.interruptAfterTimeLimit(TIME_LIMIT_MS)],
    });
    if (details.interrupted && !details.failed) this.cutShort.push(`${details.numRuns} of ${runs + examples.length} runs`);
    if (!details.failed) return;
    const message = [
      `Property failed after ${details.numRuns} run(s) and ${details.numShrinks} shrink(s) (seed ${details.seed}, path "${details.counterexamplePath}"${details.interrupted ? ', shrinking interrupted by the time limit' : ''})`,
      `Counterexample: ${brief((details.counterexample as unknown[] | null)?.[0])}`,
      `Error: ${(details.errorInstance as Error)?.message ?? details.errorInstance}`,
    ].join('\n');
    this.failures.push(message);
    throw new Error(message);
  }

  /** After the fuzzing: the normal flows still work, and nothing went uncaught in the process. */
  async expectServiceStillWorks(): Promise<void> {
    await this.world.normalFlowStillWorks();
    expectProcessAlive();
  }

  /** Prints (and writes to test/fuzz/results/) what this file sent. */
  async summarize(): Promise<void> {
    await this.db?.end();
    const summary = {
      file: this.name,
      seed: FUZZ_SEED,
      runsPerProperty: FUZZ_RUNS,
      requests: this.requests,
      frames: this.frames,
      distinctShapes: this.shapes.size,
      serverErrors: this.serverErrors,
      noAnswers: this.noAnswers,
      timeouts: this.timeouts,
      failedProperties: this.failures.length,
      cutShortByTimeLimit: this.cutShort,
      statuses: Object.fromEntries([...this.statuses].sort()),
      shapes: Object.fromEntries([...this.shapes].sort()),
    };
    const statuses = Object.entries(summary.statuses)
      .map(([status, count]) => `${status}×${count}`)
      .join(' ');
    console.log(
      `[fuzz] ${this.name}: ${summary.requests} requests${this.frames ? ` + ${this.frames} WebSocket frames` : ''}, ${summary.distinctShapes} distinct shapes (route × kind), ` +
        `${summary.serverErrors} 5xx, ${summary.noAnswers} without an HTTP answer, ${summary.timeouts} timeouts, ` +
        `${summary.failedProperties} failed properties (seed ${FUZZ_SEED}, ${FUZZ_RUNS} runs per property` +
        `${this.cutShort.length ? `; cut short by the time limit: ${this.cutShort.join(', ')}` : ''}); statuses: ${statuses}`,
    );
    const folder = new URL('../results/', import.meta.url);
    mkdirSync(folder, { recursive: true });
    writeFileSync(new URL(`${this.name}.json`, folder), `${JSON.stringify(summary, null, 2)}\n`);
  }
}

/**
 * The FuzzSession of one test file: the service starts before the file's tests; after them the
 * file's counts are printed and the service stops.
 */
export function fuzzFile(name: string): FuzzSession {
  const session = new FuzzSession(name);
  beforeAll(async () => {
    session.world = await World.start();
  });
  afterAll(async () => {
    await session.summarize();
    await session.world?.app.close();
  });
  return session;
}

/** fast-check's rendering of a value with long strings and byte arrays cut short. */
export function brief(value: unknown): string {
  return fc.stringify(shorten(value));
}

function shorten(value: unknown): unknown {
  if (typeof value === 'string') return value.length > 160 ? `${value.slice(0, 80)}…(${value.length} chars)…${value.slice(-40)}` : value;
  if (value instanceof Uint8Array) return value.length > 64 ? `<${value.length} bytes: ${Buffer.from(value.subarray(0, 32)).toString('hex')}…>` : value;
  if (Array.isArray(value)) return value.length > 20 ? [...value.slice(0, 20).map(shorten), `…(${value.length} items)`] : value.map(shorten);
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) Object.defineProperty(copy, key, { value: shorten(item), enumerable: true, writable: true, configurable: true });
    return copy;
  }
  return value;
}
