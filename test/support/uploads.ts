import { expect } from 'vitest';
import type { components } from '../../generated/public-v1.js';
import type { TestOrganization } from './fixtures.js';
import { json } from './http.js';
import type { TestServer } from './server.js';

export type UploadAnswer = components['schemas']['Upload'];

/** Step 1 of a signed upload: creates it and answers where to PUT the bytes. */
export async function startUpload(
  server: TestServer,
  org: TestOrganization,
  fileName: string,
  contentType: string,
  size: number,
): Promise<UploadAnswer> {
  const response = await server.fetch('/public/v1/media/uploads', {
    method: 'POST',
    headers: { ...org.auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ fileName, contentType, size }),
  });
  expect(response.status).toBe(201);
  return json(response);
}

/** Step 3 of a signed upload. */
export function completeUpload(server: TestServer, org: TestOrganization, uploadId: string): Promise<Response> {
  return server.fetch(`/public/v1/media/uploads/${uploadId}/complete`, { method: 'POST', headers: org.auth });
}
