import type { Env } from '../config/env.js';

/** The scope a publisher's token must hold (contract, "Notification service"). */
export const PUBLISH_SCOPE = 'notification:publish';

/** The scope a subscriber's token must hold: the instance's DEFAULT_CLIENT_SCOPE. */
export const SUBSCRIBE_SCOPE = (env: Env) => env.DEFAULT_CLIENT_SCOPE;
