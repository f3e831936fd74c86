/**
 * How a notification stream ends, as WebSocket close codes (RFC 6455 §7.4.1, and 4003 of the
 * seed); a server-sent event stream names the ones a client acts on as an event before it ends.
 */
export const CloseCode = {
  /** The instance is shutting down: reconnect (SSE: `event: shutdown`). */
  GOING_AWAY: 1001,
  /** A v2 client sent a message that is not protocol v2 (a bug to fix, not to retry). */
  PROTOCOL_ERROR: 1002,
  /**
   * Policy: too many connections (reconnect later), or the stream's right to stay open was taken
   * away (a revoked token, grant or key, a disabled client, a withdrawn scope): reconnecting with
   * the same token then fails with 401, while a client that may still subscribe gets a new token.
   */
  POLICY: 1008,
  /** Try again later: the client did not read fast enough, or the delivery could not start. */
  TRY_AGAIN_LATER: 1013,
  /** The token expired (SSE: `event: token-expired`), or a v2 client's replacement token is not valid. */
  TOKEN_EXPIRED: 4003,
} as const;
