import { describe, expect, it, vi } from 'vitest';
import type { Repository } from 'typeorm';
import type { ClientEntity } from '../../../src/clients/client.entity.js';
import { CLIENT_CHANGED_CHANNEL, ClientsRepository } from '../../../src/clients/clients.repository.js';
import type { PgListenerService } from '../../../src/database/pg-listener.service.js';

/** A PgListenerService that lets the test deliver a notification when it wants. */
function fakeListener() {
  const handlers = new Map<string, (payload: string) => void>();
  const listener = { on: (channel: string, handler: (payload: string) => void) => handlers.set(channel, handler), onResume: () => {} };
  return { listener: listener as unknown as PgListenerService, notify: (channel: string, payload: string) => handlers.get(channel)?.(payload) };
}

const row = (enabled: boolean) => ({ id: 'c1', enabled }) as ClientEntity;

/** A Repository whose one query (the row and its secret's time left) is answered by `read`. */
function fakeRepository(read: () => Promise<ClientEntity>) {
  const query = { addSelect: () => query, where: () => query, getRawAndEntities: async () => ({ entities: [await read()], raw: [{ previous_secret_left_ms: null }] }) };
  return { createQueryBuilder: () => query } as unknown as Repository<ClientEntity>;
}

describe('ClientsRepository cache', () => {
  it('serves a client from memory until a change notification names it', async () => {
    const readRow = vi.fn(async () => row(true));
    const { listener, notify } = fakeListener();
    const clients = new ClientsRepository(fakeRepository(readRow), listener);

    await clients.findById('c1');
    await clients.findById('c1');
    expect(readRow).toHaveBeenCalledTimes(1);
    notify(CLIENT_CHANGED_CHANNEL, 'c1');
    await clients.findById('c1');
    expect(readRow).toHaveBeenCalledTimes(2);
  });

  it('does not keep a row read while a change notification arrived: it may predate the change', async () => {
    let finishStaleRead!: (client: ClientEntity) => void;
    const readRow = vi
      .fn<() => Promise<ClientEntity>>()
      .mockImplementationOnce(() => new Promise((resolve) => (finishStaleRead = resolve)))
      .mockResolvedValue(row(true));
    const { listener, notify } = fakeListener();
    const clients = new ClientsRepository(fakeRepository(readRow), listener);

    const inFlight = clients.findById('c1');
    notify(CLIENT_CHANGED_CHANNEL, 'c1'); // the client was enabled meanwhile
    finishStaleRead(row(false));
    await expect(inFlight).resolves.toMatchObject({ enabled: false });

    await expect(clients.findById('c1')).resolves.toMatchObject({ enabled: true });
    expect(readRow).toHaveBeenCalledTimes(2);
  });
});
