import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadEnv } from '../../src/config/env.js';
import type { JwtSigner } from '../../src/keys/jwt-signer.service.js';
import { InvalidState, StateTokens } from '../../src/oauth-helper/state-tokens.service.js';

describe('StateTokens.verify', () => {
  afterEach(() => vi.useRealTimers());

  it('checks a signature once per state text, yet still refuses the state once it has expired', async () => {
    vi.useFakeTimers({ now: new Date('2026-11-21T08:00:00Z') });
    const exp = Math.floor(Date.now() / 1000) + 60;
    const verify = vi.fn(async () => ({ jti: 'j', client_id: 'c', iat: exp - 600, exp }));
    const states = new StateTokens({ verify } as unknown as JwtSigner, loadEnv({}));

    await expect(states.verify('state-text', 'c')).resolves.toMatchObject({ jti: 'j' });
    await expect(states.verify('state-text', 'c')).resolves.toMatchObject({ jti: 'j' });
    expect(verify).toHaveBeenCalledTimes(1);
    await expect(states.verify('state-text', 'other-client')).rejects.toThrow(InvalidState);

    vi.setSystemTime(new Date('2026-11-21T08:01:00Z'));
    await expect(states.verify('state-text', 'c')).rejects.toThrow('state is invalid or expired');
  });
});
