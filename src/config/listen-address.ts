import { createServer } from 'node:net';
import { ConfigError } from './config-error';
import type { HarnessConfig } from './harness-config';

/**
 * Checks that the server can listen at `HOST` / `PORT` before it starts, by listening there for a
 * moment: a port already taken or an address this machine does not have is a `ConfigError` naming
 * the variable, not a failure deep inside the HTTP server's start. Another process may still take
 * the port in between; the server's own start then fails as before.
 */
export async function checkListenAddress({ host, port }: Pick<HarnessConfig, 'host' | 'port'>): Promise<void> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
  } catch (error) {
    throw listenError(error, host, port) ?? error;
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The configuration error a failed listen means, or null when it is not one. */
function listenError(error: unknown, host: string, port: number): ConfigError | null {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'EADDRINUSE':
      return new ConfigError('PORT', `${port} is already in use on ${host}; stop what listens there, or set PORT to another port (PORT=0 picks a free one)`);
    case 'EACCES':
      return new ConfigError('PORT', `not allowed to listen on ${port} at ${host} (ports below 1024 need privileges)`);
    case 'EADDRNOTAVAIL':
      return new ConfigError('HOST', `'${host}' is not an address of this machine`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new ConfigError('HOST', `cannot resolve '${host}'`);
    default:
      return null;
  }
}
