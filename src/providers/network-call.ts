import type { IncomingHttpHeaders } from 'node:http';
import type { CallOptions, OutboundClient } from '../net/outbound-client.js';
import { TransientPublishError } from './publishing-contract.js';

/** A network's answer to one request of a publication, its body as text. */
export interface NetworkAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * Sends one request of a publication to a network's API, which the operator configured (so it is
 * trusted, see CallOptions). A network that could not be reached answered nothing: the step may be
 * tried again, so that is a TransientPublishError naming the network (`YouTube`).
 */
export async function callNetwork(
  outbound: OutboundClient,
  network: string,
  url: string,
  options: Omit<CallOptions, 'trusted'>,
): Promise<NetworkAnswer> {
  try {
    const response = await outbound.call(url, { ...options, trusted: true });
    return { status: response.status, headers: response.headers, body: response.body.toString('utf8') };
  } catch (error) {
    throw new TransientPublishError(
      `${network} could not be reached (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      { answered: false },
    );
  }
}
