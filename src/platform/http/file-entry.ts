// The File entry of interface §2.3 (plus `sha256` and `expires`, and for the owner
// `recipients` when the file was announced to someone, and `origin` when it arrived through an upload
// request), in one place.
import type { FileWithToken } from '../../features/files/file-links.js';
import type { RecipientStatus } from '../../features/links/tracking.js';

export function fileEntry(baseUrl: string, lang: string, f: FileWithToken, recipients?: RecipientStatus[]) {
  const backup = f.file.state === 'backup';
  // (No token: its stored copy cannot be opened after a change of the server secret; an empty
  // link rather than a wrong one.)
  const linkURL =
    f.token === null
      ? ''
      : backup
        ? `${baseUrl}/download/file/backup?lang=${lang}&z=${f.token}`
        : `${baseUrl}/download/file?lang=${lang}&k=${f.token}`;
  return {
    id: f.file.id,
    name: f.file.name,
    length: f.file.length,
    modified: f.file.created_at,
    linkURL,
    sha256: f.file.sha256,
    expires: backup ? f.file.purge_at : f.file.expires_at,
    ...(recipients?.length ? { recipients } : {}),
    ...(f.file.origin_request
      ? { origin: { request: f.file.origin_request, from: f.file.origin_from } }
      : {}),
  };
}
