// A resumable upload's Upload-Metadata: the same parameters as POST /upload's query, with the same
// limits (src/features/files/upload-limits.ts).
import { invalid } from '../../platform/errors.js';
import { UPLOAD_PARAMETER_MAX_LENGTH, type UploadParameter } from '../files/upload-limits.js';

/** Upload-Metadata as the client sent it (already base64-decoded). */
export interface UploadMetadata {
  filename?: string;
  d?: string;
  m?: string;
  c?: string;
  i?: string;
  /** (ext) An upload request's token (docs/requests.md): the upload is for that request. */
  request?: string;
  /** (ext) The PIN of an invited request link. */
  pin?: string;
}

/** The POST /upload query parameter each Upload-Metadata key is, whose limit it has. */
const METADATA_PARAMETER: Record<Exclude<keyof UploadMetadata, 'request' | 'pin'>, UploadParameter> = {
  filename: 'file',
  d: 'd',
  c: 'c',
  m: 'm',
  i: 'i',
};

/** Refuses a value longer than its POST /upload parameter may be. */
export function checkMetadataLengths(meta: UploadMetadata): void {
  for (const [k, parameter] of Object.entries(METADATA_PARAMETER)) {
    const max = UPLOAD_PARAMETER_MAX_LENGTH[parameter];
    const v = meta[k as keyof UploadMetadata];
    if (v !== undefined && v.length > max) throw invalid(`${k}: longer than ${max} characters`);
  }
  if ((meta.request?.length ?? 0) > 128) throw invalid('request: longer than 128 characters');
  if ((meta.pin?.length ?? 0) > 16) throw invalid('pin: longer than 16 characters');
}
