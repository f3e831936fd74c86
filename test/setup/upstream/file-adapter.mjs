import { readFileSync, renameSync, writeFileSync } from 'node:fs';

// oidc-provider's storage for the upstream test provider: in memory, and mirrored to a JSON file
// (when given) so a provider killed and started again still knows its grants, sessions, tokens
// and runtime clients, like a real provider coming back after an outage. The built-in memory
// adapter forgets everything with the process.

const grantable = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest']);

/** The shared store: `entries` maps "Model:id" to { payload, expiresAt }; `extra` holds the script's own state. */
export function createFileStore(file) {
  const saved = file ? readSaved(file) : { entries: {}, extra: {} };
  const entries = new Map(Object.entries(saved.entries));
  const store = {
    entries,
    extra: saved.extra,
    save() {
      if (!file) return;
      // Written aside and renamed: a SIGKILL mid-write leaves the previous state, never half a file.
      writeFileSync(`${file}.tmp`, JSON.stringify({ entries: Object.fromEntries(entries), extra: store.extra }));
      renameSync(`${file}.tmp`, file);
    },
    live(key) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (entry.expiresAt !== null && entry.expiresAt <= Date.now()) {
        entries.delete(key);
        return undefined;
      }
      return entry;
    },
  };
  return store;
}

function readSaved(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return { entries: {}, extra: {} };
    throw error;
  }
}

/** The adapter factory oidc-provider calls once per model name. */
export function fileAdapter(store) {
  return class FileAdapter {
    constructor(model) {
      this.model = model;
    }

    key(id) {
      return `${this.model}:${id}`;
    }

    async upsert(id, payload, expiresIn) {
      const expiresAt = typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : null;
      store.entries.set(this.key(id), { payload, expiresAt });
      store.save();
    }

    async find(id) {
      return store.live(this.key(id))?.payload;
    }

    async findByUid(uid) {
      return this.findWhere((payload) => payload.uid === uid);
    }

    async findByUserCode(userCode) {
      return this.findWhere((payload) => payload.userCode === userCode);
    }

    findWhere(matches) {
      for (const key of store.entries.keys()) {
        if (!key.startsWith(`${this.model}:`)) continue;
        const payload = store.live(key)?.payload;
        if (payload && matches(payload)) return payload;
      }
      return undefined;
    }

    async consume(id) {
      const entry = store.live(this.key(id));
      if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
      store.save();
    }

    async destroy(id) {
      store.entries.delete(this.key(id));
      store.save();
    }

    async revokeByGrantId(grantId) {
      for (const [key, { payload }] of store.entries) {
        if (grantable.has(key.slice(0, key.indexOf(':'))) && payload.grantId === grantId) store.entries.delete(key);
      }
      store.save();
    }
  };
}
