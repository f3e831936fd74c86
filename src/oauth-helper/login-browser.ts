/** What the login page knows of the browser, and may set on it. */
export interface LoginBrowser {
  /** The binding of a sign-in at a provider, issued (as a cookie) on first use. */
  bind(): string;
  /** The binding it already has (a confirmation after a sign-in at a provider is its own). */
  binding: string | undefined;
  /** Its session cookie's value, if any. */
  session: string | undefined;
  /** Sets the session cookie: a sign-in here began a session. */
  startSession(secret: string): void;
}
