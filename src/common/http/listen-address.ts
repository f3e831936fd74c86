import { StartupRefusal } from '../errors/startup-refusal.js';
import { listenProbe } from '../net/listen-probe.js';

/** PORT and HOST cannot be listened on: one line naming them and the fix. */
export class ListenAddressRefused extends StartupRefusal {}

/** Refuses, before anything starts, an HTTP address the service could not listen on. */
export async function checkListenAddress(host: string, port: number): Promise<void> {
  if (port === 0) return; // any free port
  const error = await listenProbe(host, port);
  if (error) throw listenRefusal(error, host, port);
}

/** The one line for a failed listen on HOST:PORT, also when `app.listen` itself fails (the port taken meanwhile). */
export function listenRefusal(error: NodeJS.ErrnoException, host: string, port: number): Error {
  switch (error.code) {
    case 'EADDRINUSE':
      return new ListenAddressRefused(`PORT ${port} on HOST ${host} is in use by another program (another voyage-connect?): stop it, or set PORT to a free port`);
    case 'EACCES':
      return new ListenAddressRefused(`PORT ${port} on HOST ${host} needs privileges this process lacks (EACCES; ports below 1024 are reserved): set PORT to 1024 or above`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return new ListenAddressRefused(`HOST ${host} is not an address of this machine (${error.code}): set HOST to one of its addresses, 0.0.0.0 for all of them, or 127.0.0.1 for this machine only`);
    default:
      return error;
  }
}
