// Who may use the tus routes: an account (Basic or Bearer, as always) or, without credentials, the
// holder of an upload request's token (creation with `request` in Upload-Metadata) or of the URL of
// an upload made that way (docs/requests.md). Anything else gets the usual 401 and its challenge.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireUser } from '../../platform/http/auth-hooks.js';

/** Whether Upload-Metadata names the key `request` (values are checked at creation). */
function namesRequest(raw: string | string[] | undefined): boolean {
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value || value.length > 16 * 1024) return false;
  return value.split(',').some((pair) => pair.trim().split(' ')[0] === 'request');
}

export async function userOrRequest(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.headers.authorization) return requireUser(request, reply);
  request.user = null;
  const { id } = (request.params ?? {}) as { id?: string };
  if (
    id === undefined ? namesRequest(request.headers['upload-metadata']) : await madeUnderRequest(request, id)
  )
    return;
  return requireUser(request, reply);
}

function madeUnderRequest(request: FastifyRequest, id: string): Promise<boolean> {
  return request.server.services.uploads.madeUnderRequest(id);
}
