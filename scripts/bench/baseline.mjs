// The ceiling the benchmark measures the service against: plain Express 5 and pg sending, for each
// benchmarked operation, the statements the service sends (as test/round-trips.test.ts records
// them), without the rate limit, contract validation, logging or query builder. It answers the same
// bodies in shape, so both sides write about as many bytes. Plain JavaScript, run with node.
//
//   BASELINE_DATABASE_URL=postgresql://… PORT=… node scripts/bench/baseline.mjs
import { createHash, createHmac, randomBytes } from 'node:crypto';
import express from 'express';
import pg from 'pg';
import { BASELINE_SQL } from './baseline-sql.mjs';

// Pipelined like the service's connections, so a create's statements share round trips the same way.
const pool = new pg.Pool({ connectionString: process.env.BASELINE_DATABASE_URL, max: 10, pipeline: true });
pool.on('error', () => {});
const signingKey = randomBytes(32);
const publicUrl = `http://127.0.0.1:${process.env.PORT}`;
const DAY_MS = 86_400_000;
const COUNTED = ['scheduled', 'publishing', 'published'];

// Named statements, as the service sends its recurring ones (src/db/statement-names.ts).
const names = new Map();
const named = (text, values) => {
  if (!names.has(text)) names.set(text, `baseline_${names.size + 1}`);
  return { name: names.get(text), text, values };
};

const iso = (date) => (date === null ? null : date.toISOString());
const id = (prefix) => `${prefix}_${randomBytes(12).toString('base64url')}`;
const sign = (text) => createHmac('sha256', signingKey).update(text).digest('base64url');

function postBody(row) {
  return {
    id: row.id,
    group: row.group_id,
    channelId: row.channel_id,
    provider: row.provider,
    content: row.content,
    mediaIds: row.media_ids,
    settings: row.settings,
    status: row.status,
    scheduledAt: iso(row.scheduled_at),
    publishedAt: iso(row.published_at),
    releaseId: row.release_id,
    releaseUrl: row.release_url,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? '' },
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

function channelBody(row) {
  return {
    id: row.id,
    provider: row.provider,
    name: row.name,
    username: row.username,
    picture: row.picture,
    status: row.status,
    disabled: row.status !== 'active',
    createdAt: iso(row.created_at),
  };
}

function quotaOf(channels, counts, now) {
  const used = new Map(counts.map((row) => [row.channel_id, Number(row.count)]));
  const resetsAt = new Date(Math.floor(now / DAY_MS) * DAY_MS + DAY_MS).toISOString();
  return channels.map((channel) => {
    const count = used.get(channel.id) ?? 0;
    return {
      channelId: channel.id,
      provider: channel.provider,
      window: 'day',
      limit: 10_000,
      used: count,
      remaining: 10_000 - count,
      resetsAt,
    };
  });
}

const app = express();
app.disable('x-powered-by');
app.set('query parser', 'simple');

app.get('/ready', (_req, res) => {
  res.json({ status: 'ready' });
});

app.use('/public/v1', async (req, res, next) => {
  const credential = /^(?:bearer[ ]+)?(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (!credential) return res.status(401).json({ error: { code: 'unauthorized' } });
  const { rows } = await pool.query(
    named(BASELINE_SQL.credential, [createHash('sha256').update(credential).digest('hex')]),
  );
  if (!rows[0]) return res.status(401).json({ error: { code: 'unauthorized' } });
  res.locals.organizationId = rows[0].organization_id;
  next();
});

app.get('/public/v1/is-connected', async (_req, res) => {
  const { rows } = await pool.query(named(BASELINE_SQL.organization, [res.locals.organizationId]));
  res.json({ connected: true, organization: { id: rows[0].id, name: rows[0].name }, credential: { type: 'api_key' } });
});

app.get('/public/v1/channels', async (_req, res) => {
  const { rows } = await pool.query(named(BASELINE_SQL.channels, [res.locals.organizationId, 'removed']));
  res.json({ data: rows.map(channelBody) });
});

app.get('/public/v1/channels/quota', async (_req, res) => {
  const now = Date.now();
  const start = new Date(Math.floor(now / DAY_MS) * DAY_MS);
  const { rows } = await pool.query(
    named(BASELINE_SQL.quota, [
      ...COUNTED,
      start,
      new Date(start.getTime() + DAY_MS),
      res.locals.organizationId,
      'removed',
    ]),
  );
  res.json({
    data: quotaOf(
      rows,
      rows.map((row) => ({ channel_id: row.id, count: row.used })),
      now,
    ),
  });
});

app.get('/public/v1/posts', async (req, res) => {
  const limit = Number(req.query.limit ?? 20);
  const { rows } = await pool.query(named(BASELINE_SQL.listPosts, [res.locals.organizationId, limit + 1]));
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > limit && last
      ? `${Buffer.from(JSON.stringify([iso(last.scheduled_at), last.id])).toString('base64url')}.${sign(last.id)}`
      : null;
  res.json({ data: page.map(postBody), nextCursor });
});

app.get('/public/v1/posts/:id', async (req, res) => {
  const { rows } = await pool.query(named(BASELINE_SQL.getPost, [res.locals.organizationId, req.params.id]));
  if (!rows[0]) return res.status(404).json({ error: { code: 'not_found' } });
  res.json(postBody(rows[0]));
});

app.get('/public/v1/media', async (req, res) => {
  const limit = Number(req.query.limit ?? 20);
  const { rows } = await pool.query(named(BASELINE_SQL.listMedia, [res.locals.organizationId, limit + 1]));
  const expires = Math.floor(Date.now() / 1000) + 3600;
  const page = rows.slice(0, limit);
  res.json({
    data: page.map((row) => ({
      id: row.id,
      fileName: row.file_name,
      contentType: row.content_type,
      kind: row.kind,
      size: Number(row.size),
      durationSec: row.duration_ms === null ? null : row.duration_ms / 1000,
      url:
        `${publicUrl}/media-files/${row.storage_key}?expires=${expires}` +
        `&type=${encodeURIComponent(row.content_type)}&signature=${sign(`GET\n${row.storage_key}\n${expires}`)}`,
      urlExpiresAt: new Date(expires * 1000).toISOString(),
      createdAt: iso(row.created_at),
    })),
    nextCursor: rows.length > limit ? sign(page.at(-1).id) : null,
  });
});

app.post('/public/v1/posts', express.json(), async (req, res) => {
  const organizationId = res.locals.organizationId;
  const { date, channelIds, content } = req.body;
  const scheduledAt = new Date(date);
  const now = new Date();
  const { rows: channels } = await pool.query(
    named(BASELINE_SQL.createChannels(channelIds.length), [organizationId, ...channelIds, 'removed']),
  );
  const byId = new Map(channels.map((channel) => [channel.id, channel]));
  if (channelIds.some((channelId) => byId.get(channelId)?.status !== 'active'))
    return res.status(422).json({ error: { code: 'unprocessable' } });
  const dayStart = new Date(Math.floor(scheduledAt.getTime() / DAY_MS) * DAY_MS);
  const group = id('grp');
  const rows = channelIds.map((channelId) => ({
    id: id('post'),
    organization_id: organizationId,
    group_id: group,
    channel_id: channelId,
    content,
    media_ids: [],
    alt_texts: {},
    thread: [],
    first_comment: null,
    settings: { __type: 'sandbox', outcome: 'published', failingPart: 1 },
    status: 'scheduled',
    queued: false,
    scheduled_at: scheduledAt,
    created_at: now,
    updated_at: now,
  }));
  const claims = channelIds.map((channelId) => ({ channel_id: channelId, adding: 1, daily_limit: 10_000 }));
  const client = await pool.connect();
  try {
    const begun = client.query('begin');
    const locking = client.query(named(BASELINE_SQL.lockChannels(channelIds.length), [organizationId, ...channelIds]));
    const inserting = client.query(
      named(BASELINE_SQL.insertPosts, [
        JSON.stringify(rows),
        JSON.stringify(claims),
        ...COUNTED,
        dayStart,
        new Date(dayStart.getTime() + DAY_MS),
      ]),
    );
    const [, { rows: locked }, { rows: inserted }] = await Promise.all([begun, locking, inserting]);
    if (locked.some((channel) => channel.status !== 'active') || inserted.length !== rows.length) {
      await client.query('rollback');
      return res.status(422).json({ error: { code: 'unprocessable' } });
    }
    const posts = inserted.map((row) => ({ ...row, provider: byId.get(row.channel_id).provider }));
    const events = [...posts.map((post) => [post, 'created']), ...posts.map((post) => [post, 'scheduled'])];
    const jobs = posts.map((post) => ({
      data: { postId: post.id },
      startAfter: iso(post.scheduled_at),
      groupId: post.channel_id,
      groupTier: post.provider,
    }));
    await Promise.all([
      client.query(
        named(
          BASELINE_SQL.insertEvents(events.length),
          events.flatMap(([post, type]) => [organizationId, post.id, type, now, '{}', JSON.stringify(postBody(post))]),
        ),
      ),
      client.query(named(BASELINE_SQL.planJobs, [JSON.stringify(jobs)])),
      client.query('commit'),
    ]);
    res.status(201).json({ group, data: posts.map(postBody) });
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
});

app.use((error, _req, res, _next) => {
  console.error(error);
  res.status(500).json({ error: { code: 'internal' } });
});

app.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`baseline on ${publicUrl}`));
// Exits through process.exit, so that node's --cpu-prof writes its profile.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
