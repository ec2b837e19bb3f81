import type { Clock } from '../../core/clock.js';
import { createHmac } from 'node:crypto';
import type { OutboundClient } from '../../net/outbound-client.js';
import { callNetwork, type NetworkAnswer } from '../network-call.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  TransientPublishError,
  retryAfterSeconds,
  type Lookup,
  type Progress,
  type PublicationInput,
  type PublishingAdapter,
  type StepResult,
} from '../publishing-contract.js';

/** What a sandbox channel's requests to the sandbox network are signed with: a key of the installation. */
export function sandboxToken(key: Buffer, channelId: string): string {
  return createHmac('sha256', key).update(`sandbox-channel:${channelId}`).digest('base64url');
}

// The sandbox network answers at once, or after SANDBOX_LATENCY_MS; this is far beyond either.
const TIMEOUT_SECONDS = 60;
const MAX_ANSWER_BYTES = 64 * 1024;

type Answer = NetworkAnswer;

interface Release {
  id: string;
  url: string;
}

/**
 * The sandbox network: it publishes a post to a page of this server (`/sandbox/releases/{id}`), so
 * the whole flow can be tried without a social account. It speaks HTTP like the real networks, to
 * the base URL the operator configured (this server by default), through the same outbound client,
 * and its publication is a single irreversible step keyed by post and attempt (and part, in a
 * thread, whose later parts reply to the part before), which it can be asked about afterwards.
 */
export class SandboxAdapter implements PublishingAdapter {
  constructor(
    private readonly outbound: OutboundClient,
    private readonly baseUrl: () => string,
    private readonly key: Buffer,
    /** Set by the operator, to see how the publisher keeps a network's limits. */
    readonly limits: PublishingAdapter['limits'],
    private readonly clock: Clock,
  ) {}

  start(input: PublicationInput): Progress {
    // A thread's later parts and a first comment are publications of their own, each with its key.
    const part = input.reply ? `:${input.reply.part}` : input.comment ? `:comment` : '';
    return {
      step: 'publish',
      reference: { key: `${input.post.id}:${input.post.attempt}${part}` },
      irreversible: true,
    };
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    const response = await this.send(input, 'POST', '/sandbox/api/releases', {
      key: progress.reference.key,
      channelId: input.channel.id,
      content: input.post.content,
      settings: input.post.settings,
      media: input.media.map((m) => ({
        id: m.id,
        fileName: m.fileName,
        contentType: m.contentType,
        kind: m.kind,
        ...(m.altText === undefined ? {} : { altText: m.altText }),
      })),
      ...(input.reply ? { replyTo: input.reply.parent.releaseId, part: input.reply.part } : {}),
      ...(input.comment ? { commentOn: input.comment.on.releaseId, part: input.comment.part } : {}),
    });
    if (response.status === 200 || response.status === 201) {
      const release = JSON.parse(response.body) as Release;
      return { outcome: { status: 'published', releaseId: release.id, releaseUrl: release.url } };
    }
    throw this.failure(response);
  }

  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    const response = await this.send(
      input,
      'GET',
      `/sandbox/api/releases/by-key/${encodeURIComponent(String(progress.reference.key))}`,
    );
    if (response.status === 200) {
      const release = JSON.parse(response.body) as Release;
      return { status: 'published', releaseId: release.id, releaseUrl: release.url };
    }
    if (response.status === 404) return { status: 'absent' };
    // 410: the network keeps no record of the key any more, so it cannot tell.
    if (response.status === 410)
      return { status: 'unknown', message: 'the sandbox network no longer knows the publication' };
    throw this.failure(response);
  }

  private send(input: PublicationInput, method: string, path: string, body?: object): Promise<Answer> {
    return callNetwork(this.outbound, 'the sandbox network', `${this.baseUrl()}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${sandboxToken(this.key, input.channel.id)}`,
        Accept: 'application/json',
        ...(body ? { 'Content-Type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: input.signal,
      timeoutSeconds: TIMEOUT_SECONDS,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
  }

  private failure(response: Answer): Error {
    let message = `the sandbox network answered ${response.status}`;
    try {
      message = (JSON.parse(response.body) as { message?: string }).message ?? message;
    } catch {
      // Not JSON: the status says it.
    }
    if (response.status === 401 || response.status === 403) return new ReconnectNeededError(message);
    if (response.status === 429 || response.status >= 500) {
      return new TransientPublishError(message, {
        answered: true,
        retryAfterSeconds: retryAfterSeconds(response.headers['retry-after'], this.clock.now()),
      });
    }
    return new PermanentPublishError('rejected_by_network', message);
  }
}
