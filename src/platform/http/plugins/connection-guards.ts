// The connection-level guards, in the order they must see a request: connections waiting in the
// kernel's queue, connections per address (at most half of the descriptors), the request head,
// unwanted bodies, pipelining, body time limits; then the upload slots every upload route asks for.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../../app/config.js';
import { openFileLimit } from '../../native/native.js';
import { acceptWaitingConnections } from '../accept-backlog.js';
import {
  checkRequestHead,
  guardBodies,
  limitBodyTime,
  limitConnectionsPerAddress,
  type RawAnswerSeen,
  serializePipelining,
} from '../connection-limits.js';
import { RESERVE, uploadSlots } from '../upload-slots.js';

export function guardConnections(app: FastifyInstance, config: Config, seenRaw: RawAnswerSeen): void {
  acceptWaitingConnections(app.server);
  const fileLimit = openFileLimit();
  // However many are allowed, one address holds at most half of the descriptors with connections.
  const halfOfFiles = fileLimit === null ? Number.POSITIVE_INFINITY : Math.floor((fileLimit - RESERVE) / 2);
  limitConnectionsPerAddress(
    app.server,
    config.maxConnectionsPerAddress > 0 ? Math.min(config.maxConnectionsPerAddress, halfOfFiles) : 0,
  );
  checkRequestHead(app, seenRaw);
  guardBodies(app);
  serializePipelining(app);
  limitBodyTime(app, {
    idleMs: config.bodyTimeoutSeconds * 1000,
    smallBodyMs: config.smallBodySeconds * 1000,
  });

  app.decorate(
    'uploadSlot',
    uploadSlots(app.server, {
      perUser: config.maxUploadsPerUser,
      perAddress: config.maxUploadsPerAddress,
      fileLimit,
    }),
  );
}
