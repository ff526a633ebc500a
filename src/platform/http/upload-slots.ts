// How many uploads this instance receives at once. An upload being received holds about three
// descriptors (its connection, its file, the native writer's duplicate of it), a bare connection
// one: under the usual limit of 1,024, 400 trickling uploads used them up, and every upload, any
// user's, then failed on a file it could not open. So an upload starts only if its descriptors fit
// under the process's limit (503 otherwise), and one account or one address may send only so many
// at once (429), leaving room for everyone else.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { currentUser } from './auth-hooks.js';
import { AppError } from './http-error.js';

/** Descriptors an upload holds besides its connection's: its file and the writer's duplicate. */
const PER_UPLOAD = 2;
/** Descriptors kept for everything else: the database, listening sockets, downloads' files, logs. */
export const RESERVE = 64;

export interface UploadLimits {
  perUser: number;
  perAddress: number;
  /** The process's limit on open descriptors; null: unknown, not checked. */
  fileLimit: number | null;
}

const busy = (detail: string, status: 429 | 503) => new AppError(status, detail, { 'Retry-After': '5' });

function count(map: Map<string | number, number>, key: string | number, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}

/**
 * The preHandler that admits an upload (after authentication, before its body is read); its slot
 * is given back when its response closes. A request without a body (a tus creation) takes none.
 */
export function uploadSlots(server: Server, limits: UploadLimits): preHandlerHookHandler {
  let connections = 0;
  let uploads = 0;
  const byUser = new Map<string | number, number>();
  const byAddress = new Map<string | number, number>();
  server.on('connection', (socket: Socket) => {
    connections++;
    socket.once('close', () => connections--);
  });
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const headers = request.headers;
    const length = headers['content-length'];
    if (headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return done();
    // Someone without an account (an upload request's sender) is counted by address only.
    const user = request.user ? currentUser(request).id : `anonymous:${request.ip ?? ''}`;
    const address = request.ip ?? '';
    if (limits.perUser > 0 && (byUser.get(user) ?? 0) >= limits.perUser)
      return done(busy(`at most ${limits.perUser} uploads at once per user: retry when one is done`, 429));
    if (limits.perAddress > 0 && (byAddress.get(address) ?? 0) >= limits.perAddress)
      return done(
        busy(`at most ${limits.perAddress} uploads at once from one address: retry when one is done`, 429),
      );
    if (limits.fileLimit !== null && connections + (uploads + 1) * PER_UPLOAD + RESERVE > limits.fileLimit)
      return done(busy('the server is receiving as many uploads as it can; retry shortly', 503));
    uploads++;
    count(byUser, user, 1);
    count(byAddress, address, 1);
    reply.raw.once('close', () => {
      uploads--;
      count(byUser, user, -1);
      count(byAddress, address, -1);
    });
    done();
  };
}
