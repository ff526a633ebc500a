// Limits that keep one client from holding the server (docs/security.md): a time limit on
// request bodies, and a cap on the connections one peer address may hold. Node bounds the header
// phase itself (headersTimeout) but has no body timeout that would not also cut long uploads, and
// no per-peer limit at all. Also where Node would answer bare or cut the connection: the request
// head's rules (Expect, Host, codings, CONNECT) and requests it cannot parse, each answered with
// an envelope after the answers before it on the connection.
export { asArray, guardBodies, type StreamingBody } from './guards/bodies.js';
export { limitBodyTime } from './guards/body-time.js';
export { limitConnectionsPerAddress } from './guards/connections-per-address.js';
export { serializePipelining } from './guards/pipelining.js';
export {
  clientErrorAnswerer,
  type RawAnswerSeen,
  rawErrorResponse,
  type SocketWithResponse,
} from './guards/raw-answers.js';
export { checkRequestHead } from './guards/request-head.js';
