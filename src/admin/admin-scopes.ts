/** A token that may read through the admin API. */
export const ADMIN_READ_SCOPE = 'admin:read';

/** A token that may change through the admin API. */
export const ADMIN_WRITE_SCOPE = 'admin:write';
