import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface Certificate {
  /** PEM of the self-signed certificate: the CA a client trusts. */
  cert: string;
  certPath: string;
  keyPath: string;
}

/** A self-signed certificate for `hostName` (P-256, valid for two days), made with the openssl CLI. */
export function makeCertificate(dir: string, hostName: string): Certificate {
  const certPath = path.join(dir, 'cert.pem');
  const keyPath = path.join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${hostName}`,
      '-addext',
      `subjectAltName=DNS:${hostName}`,
      '-keyout',
      keyPath,
      '-out',
      certPath,
    ],
    { stdio: 'pipe' },
  );
  return { cert: fs.readFileSync(certPath, 'utf8'), certPath, keyPath };
}
