#!/usr/bin/env bash
# The SDK's tarball is self-contained: packed from this repository (`npm pack ./src/sdk`, which
# builds it first), installed into an empty project outside the repository with nothing else
# than the tarball and its own dependency from the npm registry, a file using every method and
# exported type compiles with `tsc --strict` (declarations included), and the installed package
# runs: it calls a local HTTP server and maps an error answer to a ServiceError.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

npm pack ./src/sdk --pack-destination "$work" --loglevel=warn >/dev/null
tarball=$(ls "$work"/service-sdk-*.tgz)
echo "packed $(basename "$tarball"): $(tar -tzf "$tarball" | wc -l) files"
if tar -tzf "$tarball" | grep -Ev '^package/(package\.json|README\.md|dist/[a-z-]+\.(js|d\.ts))$'; then
  echo "the tarball holds files other than its build, README and package.json (above)" >&2
  exit 1
fi

mkdir "$work/consumer"
cd "$work/consumer"
cat >package.json <<'JSON'
{ "name": "sdk-consumer", "private": true, "type": "module" }
JSON
npm install --no-audit --no-fund --ignore-scripts --loglevel=error "$tarball" >/dev/null

cat >tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "strict": true,
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "types": [],
    "skipLibCheck": false,
    "noEmit": true
  },
  "files": ["use-sdk.ts"]
}
JSON

cat >use-sdk.ts <<'TS'
import Service, {
  ServiceError,
  type Channel,
  type CreatePostRequest,
  type Media,
  type Post,
  type PostStatus,
  type Series,
  type TikTokCreatorInfo,
  type TikTokSettings,
  type YouTubeSettings,
} from '@service/sdk';

const service = new Service('svc_live_example', 'http://localhost:3000', { maxRetries: 3, maxRetryAfter: 30 });
const fromEnvironment = new Service('pos_example');

const youtube: YouTubeSettings = { __type: 'youtube', title: 'Winter', privacyStatus: 'unlisted', madeForKids: false };
const tiktok: TikTokSettings = { __type: 'tiktok', postMode: 'direct', privacyLevel: 'SELF_ONLY' };
// @ts-expect-error TikTok settings need a privacy level
const noPrivacy: TikTokSettings = { __type: 'tiktok', postMode: 'direct' };
// @ts-expect-error YouTube has no such privacy status
const badPrivacy: YouTubeSettings = { ...youtube, privacyStatus: 'friends' };

export async function everyMethod(video: Uint8Array): Promise<void> {
  const connected: true = (await service.isConnected()).connected;
  const channels: Channel[] = (await service.channels()).data;
  const same: Channel[] = (await fromEnvironment.integrations()).data;
  const remaining: number | undefined = (await service.quota()).data[0]?.remaining;

  const info: TikTokCreatorInfo = await service.tiktokCreatorInfo('ch_tiktok');
  const body: CreatePostRequest = {
    type: 'schedule',
    date: '2026-12-01T09:30:00.000Z',
    posts: [
      { channelId: 'ch_youtube', content: 'Winter', mediaIds: ['med_1'], settings: youtube },
      ...(info.canPost ? [{ channelId: 'ch_tiktok', content: 'Winter', mediaIds: ['med_1'], settings: tiktok }] : []),
    ],
  };
  const { group, data: created } = await service.createPost(body, { idempotencyKey: 'order-42' });
  const again: string = (await service.post(body)).group;
  const page = await service.listPosts({ group, status: ['scheduled'], limit: 10 });
  const cursor: string | null = (await service.postList({ cursor: page.nextCursor ?? undefined })).nextCursor;
  for await (const post of service.iteratePosts({ channelId: ['ch_youtube'] })) {
    const status: PostStatus = post.status;
  }
  const post: Post = await service.getPost(created[0]!.id);
  await service.updatePost(post.id, { content: 'Winter is here' });
  await service.schedulePost(post.id, new Date());
  await service.schedulePost(post.id, '2026-12-02T09:30:00.000Z');
  await service.changePostStatus(post.id, 'draft');
  // @ts-expect-error only draft and scheduled can be set
  await service.changePostStatus(post.id, 'published');
  const deleted: void = await service.deletePost(post.id);
  const series: Series = await service.createSeries({
    rule: 'FREQ=WEEKLY;BYDAY=MO',
    timeZone: 'Europe/Berlin',
    startsAt: '2030-12-02T08:00:00.000Z',
    posts: [{ channelId: 'ch_sandbox', content: 'Monday tip' }],
  });
  const next: string[] = (await service.getSeries(series.id)).nextOccurrences;
  const split: Series = await service.splitSeries(series.id, { from: '2030-12-16T08:00:00.000Z', rule: 'FREQ=WEEKLY;BYDAY=WE' });
  const ended: string | null = (await service.endSeries(split.id)).endsAt;
  const skipped: PostStatus = (await service.skipPost(post.id)).status;

  const media: Media = await service.upload(video, 'winter.mp4', { signal: AbortSignal.timeout(60_000) });
  const fromUrl: Media = await service.uploadFromUrl('https://cdn.example.org/poster.jpg');
  const listed: Media[] = (await service.listMedia({ limit: 50 })).data;
  for await (const item of service.iterateMedia()) console.log(item.id);
  await service.deleteMedia(media.id, { maxRetries: 0 });

  const analytics = await service.tiktokAnalytics('ch_tiktok', { days: 30 });
  const followers: number = analytics.account.followerCount;
  for await (const clip of service.iterateTiktokVideos('ch_tiktok', { days: 7 })) console.log(clip.viewCount);

  try {
    await service.getPost('post_missing');
  } catch (error) {
    if (error instanceof ServiceError) {
      const facts: [number, string, string | undefined, number | undefined, string] = [
        error.status,
        error.code,
        error.requestId,
        error.retryAfter,
        error.request.url,
      ];
      for (const detail of error.details) console.log(detail.path, detail.message);
    }
  }
}
TS
"$root/node_modules/.bin/tsc" -p . --strict
echo "use-sdk.ts type-checks with tsc --strict against the installed package"

cat >run-sdk.mjs <<'JS'
import { createServer } from 'node:http';
import Service, { ServiceError } from '@service/sdk';

const server = createServer((req, res) => {
  const found = req.url === '/public/v1/channels' && req.headers.authorization === 'Bearer svc_live_example';
  res.writeHead(found ? 200 : 404, { 'Content-Type': 'application/json', 'X-Request-Id': 'req_smoke' });
  res.end(JSON.stringify(found ? { data: [] } : { error: { code: 'not_found', message: 'No such post.', requestId: 'req_smoke' } }));
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const service = new Service('svc_live_example', `http://127.0.0.1:${server.address().port}`);
const channels = await service.channels();
const error = await service.getPost('post_missing').catch((caught) => caught);
server.close();
if (channels.data.length !== 0 || !(error instanceof ServiceError) || error.status !== 404 || error.code !== 'not_found') {
  console.error('unexpected:', channels, error);
  process.exit(1);
}
JS
node run-sdk.mjs
echo "the installed package runs: it calls the API and throws ServiceError for an error answer"
