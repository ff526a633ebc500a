// What resumable uploads need from upload requests (src/features/requests/, docs/requests.md): an
// upload created with `request <token>` in its Upload-Metadata is made by someone without an
// account. The request decides whether it may be made (its link, PIN, limits), reserves its share
// of the limits in the transaction of the upload row, and is told when the upload is stored or
// released. Its URL is then its only credential (as a tus upload URL is: 144 random bits).
import type { Db } from '../../platform/sql/database.js';

/** Who an admitted upload is for. */
export interface Admission {
  requestId: string;
  linkId: number;
  /** The requester: the upload's uploader, as if they had uploaded it. */
  uploaderId: number;
  /** The area the file lands in. */
  ownerId: number;
}

export interface RequestGate {
  /** Checks token, state, PIN, rate limits and the per-file limit; throws the refusal. */
  admit(token: string, pin: string | undefined, length: number, remote: string | null): Promise<Admission>;
  /** Reserves the upload's share of the request's limits, in the upload row's transaction. */
  reserve(trx: Db, admission: Admission, uploadId: string, length: number): Promise<void>;
  /**
   * Whether the upload was made under a request; throws `gone` ("request closed") while it is
   * unfinished and its request is closed or expired.
   */
  check(uploadId: string): Promise<boolean>;
  /** The upload became file `fileId` (in the commit's transaction). */
  stored(trx: Db, uploadId: string, fileId: number): Promise<void>;
  /** The upload went without a file (termination, expiry): its reservation is released. */
  released(trx: Db, uploadId: string): Promise<void>;
}
