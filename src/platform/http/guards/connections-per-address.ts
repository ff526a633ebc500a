// A cap on the connections one peer address may hold: Node has no per-peer limit at all.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Refuses (closes at once) a connection from an address that already holds `max` open ones, so a
 * flood from one peer cannot use up the process's descriptors. 0 turns the limit off.
 */
export function limitConnectionsPerAddress(server: Server, max: number): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const n = open.get(address) ?? 0;
    if (n >= max) {
      socket.destroy();
      return;
    }
    open.set(address, n + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
