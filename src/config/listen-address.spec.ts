import { createServer, type Server } from 'node:net';
import { ConfigError } from './config-error';
import { checkListenAddress } from './listen-address';

describe('checkListenAddress', () => {
  let occupier: Server | null = null;
  afterEach(async () => {
    await new Promise<void>((resolve) => (occupier ? occupier.close(() => resolve()) : resolve()));
    occupier = null;
  });

  async function caught(address: { host: string; port: number }): Promise<unknown> {
    return checkListenAddress(address).then(
      () => null,
      (error: unknown) => error,
    );
  }

  it('passes for an address the server can listen at, and leaves it free', async () => {
    occupier = createServer();
    await new Promise<void>((resolve) => occupier!.listen(0, '127.0.0.1', resolve));
    const { port } = occupier.address() as { port: number };
    await new Promise<void>((resolve) => occupier!.close(() => resolve()));
    occupier = null;

    await expect(checkListenAddress({ host: '127.0.0.1', port })).resolves.toBeUndefined();
    // Checked twice: the check itself let go of the port.
    await expect(checkListenAddress({ host: '127.0.0.1', port })).resolves.toBeUndefined();
  });

  it('names PORT when the port is taken, and says how to pick another', async () => {
    occupier = createServer();
    await new Promise<void>((resolve) => occupier!.listen(0, '127.0.0.1', resolve));
    const { port } = occupier.address() as { port: number };

    const error = await caught({ host: '127.0.0.1', port });
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(
      `PORT: ${port} is already in use on 127.0.0.1; stop what listens there, or set PORT to another port (PORT=0 picks a free one)`,
    );
  });

  it('names HOST when it is not an address of this machine', async () => {
    // 192.0.2.0/24 is reserved for documentation (RFC 5737): no host has it.
    const error = await caught({ host: '192.0.2.1', port: 0 });
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe("HOST: '192.0.2.1' is not an address of this machine");
  });

  it('names HOST when the name does not resolve', async () => {
    // `.invalid` never resolves (RFC 2606).
    const error = await caught({ host: 'harness.invalid', port: 0 });
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe("HOST: cannot resolve 'harness.invalid'");
  });
});
