/** RFC 6749 §3.3 scope-token: printable ASCII except space, `"` and `\`. One definition for the token endpoint, clients and identity providers. */
export const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
