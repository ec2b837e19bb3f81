import type { components } from '../../generated/public-v1.js';
import { dataOf, publicApi } from './api.js';
import type { TestOrganization } from './fixtures.js';
import type { TestServer } from './server.js';

export type UploadAnswer = components['schemas']['Upload'];

/** Step 1 of a signed upload: creates it and answers where to PUT the bytes. */
export function startUpload(
  server: TestServer,
  org: TestOrganization,
  fileName: string,
  contentType: string,
  size: number,
): Promise<UploadAnswer> {
  return dataOf(
    publicApi(server, org.auth).POST('/public/v1/media/uploads', { body: { fileName, contentType, size } }),
    201,
  );
}

/** Step 3 of a signed upload. */
export function completeUpload(server: TestServer, org: TestOrganization, uploadId: string): Promise<Response> {
  return server.fetch(`/public/v1/media/uploads/${uploadId}/complete`, { method: 'POST', headers: org.auth });
}
