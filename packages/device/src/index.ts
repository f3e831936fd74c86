export { ClientCredentials, type ClientCredentialsOptions } from './client-credentials.js';
export type { Delivery, Notification, Position } from './connection.js';
export type { DeviceCode, DeviceCodeSignInOptions } from './device-code.js';
export { AccessDenied, Forbidden, InvalidClient, RequestRefused, ServiceUnavailable, SignInExpired, SignInRequired, VoyageError } from './errors.js';
export type { HelperSignInOptions } from './helper-sign-in.js';
export { FileStore, MemoryStore, type Store } from './stores.js';
export { Subscriber, type SubscriberEvents, type SubscriberOptions, type Transport } from './subscriber.js';
export type { TokenResponse, TokenSource } from './tokens.js';
export { UserTokens, type UserTokensOptions } from './user-tokens.js';
