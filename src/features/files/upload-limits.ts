// The limits of an upload's parameters, one copy for every way an upload comes: POST /upload's
// query (routes.ts), a resumable upload's Upload-Metadata (src/features/uploads/) and the portal's
// form (src/features/portal/client/). The size of the file is REMESSA_MAX_FILE_SIZE's
// (Config.maxFileSize), the same for all. No imports, so the portal bundle can take it.

/**
 * The longest value of each upload parameter, in characters, by its name in POST /upload's query:
 * the file's name (`file`; `filename` in Upload-Metadata), the destination area (`d`), the
 * recipients' mobile numbers (`c`) and e-mail addresses (`m`), and the message (`i`). The
 * recipients are as many as these lists hold.
 */
export const UPLOAD_PARAMETER_MAX_LENGTH = { file: 1024, d: 64, c: 2000, m: 5000, i: 1000 } as const;

export type UploadParameter = keyof typeof UPLOAD_PARAMETER_MAX_LENGTH;
